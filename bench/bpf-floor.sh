#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a perf_event BPF program costs on this host at a sampling rate,
# before ember's own work (issue 13's "< 2 us a sample at 99 Hz"): the
# kernel's own run_time_ns / run_cnt (kernel.bpf_stats_enabled) of
# bpftrace programs of growing size next to ember's on-CPU program, with
# every CPU busy in bench/workloads/spin (a shallow stack) or deep (33
# no-frame-pointer frames). Configurations, interleaved per repetition:
#   empty    profile:hz:N { }                       the invocation itself
#   map      profile:hz:N { @[tid] = count(); }     one hash-map update
#   ustack   profile:hz:N { @[ustack(perf, 32)] = count(); }
#            bpf_get_stackid's frame-pointer walk, a stack map and a hash
#            update: the cheapest program that aggregates user stacks
#   ember    ember record --backend bpf -F N -p WORKLOAD (tables, record,
#            ring)
#
#   bench/bpf-floor.sh [--hz N] [--reps N] [--seconds S] [--out DIR]
#                      [--arm64-vm [--kernel 6.1|6.12]]
#
# Prints the median ns per run and the range over the repetitions. Needs
# bpftrace (installed from Debian if missing) and root. Not part of
# `make bench`: it measures the host, not ember.
#
# --arm64-vm: the same in the arm64 VM (issue 23: "the per-sample cost on
# arm64 against bpftrace's cheapest user-stack program in the same VM"):
# Debian's arm64 bpftrace and a cross-built ember (scripts/build-arm64.sh)
# on Debian's arm64 kernel under qemu-system-aarch64 (TCG), both vCPUs
# busy, busybox only (bench/vm/bpf-floor-guest.sh reads each program's
# run_time_ns/run_cnt from its holder's fdinfo). Fetches the guest root
# with bpftrace (scripts/fetch-arm64-guest.sh --set bench, ~315 MB in the
# cache). Under TCG the figures are emulated nanoseconds: compare the rows
# with each other, not with the host's.
set -euo pipefail
cd "$(dirname "$0")/.."

hz=99 reps=3 secs=10 out="" vm="" kernel=6.1
while [ $# -gt 0 ]; do
	case $1 in
	--arm64-vm) vm=arm64; shift ;;
	--kernel) kernel=$2; shift 2 ;;
	--hz) hz=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '3,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bpf-floor: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "bpf-floor: run as root (bpf_stats, perf events)" >&2; exit 1; }
rows=$(mktemp)

# the rows of --arm64-vm, from one VM run
arm64_vm_rows() {
	local tmp pay agent cflags
	export EMBER_CACHE=${EMBER_CACHE:-$PWD/.cache}
	tmp=$(mktemp -d /tmp/ember-floor-arm64.XXXXXX)
	pay=$tmp/p
	mkdir -p "$pay"
	agent=$(scripts/build-arm64.sh --no-tests --quiet | sed -n 's/^agent=//p')
	[ -x "$agent" ] || { echo "bpf-floor: the arm64 build failed" >&2; return 1; }
	cp "$agent" "$pay/ember"
	cflags="-std=gnu11 -O2 -g -Wall -Wextra -Werror -pthread"
	aarch64-linux-gnu-gcc $cflags -fno-omit-frame-pointer -o "$pay/spin" bench/workloads/spin.c
	aarch64-linux-gnu-gcc $cflags -fomit-frame-pointer -fasynchronous-unwind-tables \
		-o "$pay/deep" bench/workloads/deep.c
	cp bench/vm/bpf-floor-guest.sh "$pay/guest.sh"
	scripts/fetch-arm64-guest.sh --set bench >/dev/null
	# 8 configurations a repetition, each ~secs + 10 s, bpftrace's compile included
	if ! EMBER_ARM64_GUEST_SET=bench selftests/vm/run-vm.sh --arch arm64 \
		--kernel "$kernel" --payload "$pay" --host-file /usr/bin/bpftrace --mem 2G \
		--cmd "HZ=$hz SECS=$secs REPS=$reps sh /payload/p/guest.sh" \
		--timeout $((reps * 8 * (secs + 40) + 120)) --log "$tmp/console.log" \
		>"$tmp/guest.out" 2>"$tmp/run-vm.err" || ! grep -q FLOOR-DONE "$tmp/guest.out"; then
		echo "bpf-floor: the VM run failed: $(tail -n 3 "$tmp/run-vm.err" | tr '\n' ' ')" >&2
		tail -n 20 "$tmp/guest.out" >&2
		return 1
	fi
	grep -E '^(EMBER-ERR|FLOOR-DEBUG)' "$tmp/guest.out" >&2 || true
	sed -n 's/^ROW //p' "$tmp/guest.out" >"$rows"
	rm -rf "$tmp"
}

W=.cache/bench
# ns per run of the perf_event programs process $1 holds: "runs ns"
# (bench.py's own_prog_ids(): its prog fds, so nobody else's programs)
prog_cost() {
	bpftool -j prog show | PYTHONPATH=bench python3 -c '
import json, sys
from bench import own_prog_ids
ids = own_prog_ids(int(sys.argv[1])); cnt = ns = 0
for p in json.load(sys.stdin):
    if p.get("type") == "perf_event" and p["id"] in ids:
        cnt += p.get("run_cnt", 0); ns += p.get("run_time_ns", 0)
print(cnt, ns // cnt if cnt else 0)' "$1"
}

one() {	# config workload
	local cfg=$1 wl=$2 w p r
	$W/$wl -t "$(nproc)" -d $((secs + 5)) >/dev/null 2>&1 &
	w=$!
	sleep 0.5
	case $cfg in
	empty) bpftrace -e "profile:hz:$hz { }" >/dev/null 2>&1 & ;;
	map) bpftrace -e "profile:hz:$hz { @[tid] = count(); }" >/dev/null 2>&1 & ;;
	ustack) bpftrace -e "profile:hz:$hz { @[ustack(perf, 32)] = count(); }" >/dev/null 2>&1 & ;;
	ember) agent/ember record --backend bpf -F "$hz" -p "$w" -d $((secs + 3)) \
		-o "$rows.folded" >/dev/null 2>&1 & ;;
	esac
	p=$!
	sleep "$secs"
	r=$(prog_cost "$p")
	kill -INT "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	kill "$w" 2>/dev/null || true
	wait "$w" 2>/dev/null || true
	echo "$cfg $wl $r" >>"$rows"
}

# the rows of this host: every configuration, interleaved per repetition
host_rows() {
	command -v bpftrace >/dev/null ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q bpftrace >/dev/null
	make -s agent bench-workloads >/dev/null
	old_stats=$(sysctl -n kernel.bpf_stats_enabled)
	trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; rm -f $rows $rows.folded' EXIT
	sysctl -qw kernel.bpf_stats_enabled=1
	for rep in $(seq "$reps"); do
		for wl in spin deep; do
			for cfg in empty map ustack ember; do
				one $cfg $wl
			done
		done
	done
}

trap 'rm -f $rows $rows.folded' EXIT
if [ "$vm" = arm64 ]; then
	arm64_vm_rows || exit 1
	where="in the arm64 VM ($kernel, TCG; emulated ns)"
else
	host_rows
	where="on this host"
fi

report=$(python3 - "$rows" "$hz" "$where" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    cfg, wl, runs, ns = line.split()
    if int(runs):
        rows.setdefault((wl, cfg), []).append(int(ns))
print(f"perf_event program cost at {sys.argv[2]} Hz {sys.argv[3]}, every CPU busy (ns per run, median [range])")
print(f"{'workload':8} {'config':7} {'median':>7}  range")
for (wl, cfg), v in rows.items():
    print(f"{wl:8} {cfg:7} {statistics.median(v):7.0f}  [{min(v)}..{max(v)}] n={len(v)}")
EOF
)
echo "$report"
if [ -n "$out" ]; then
	mkdir -p "$out"
	echo "$report" >"$out/bpf-floor.txt"
	cp "$rows" "$out/bpf-floor.rows"
	echo "bench/bpf-floor.sh --hz $hz --reps $reps --seconds $secs${vm:+ --arm64-vm --kernel $kernel}" >"$out/bpf-floor.cmd"
fi
