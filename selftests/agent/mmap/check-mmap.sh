#!/usr/bin/env bash
# Mappings from the kernel (EMBER_REC_MMAP, agent/proc/kmaps.c), end to
# end: ember record of mmapwork, which dlopen's libm after its exec, calls
# cos(), dlclose's it, dlopen's it again and calls sin(). Both must come
# out symbolized under lib_spin, the agent must have taken the process's
# maps from the kernel (EMBER_BPF_VERBOSE's kmaps line), and, where strace
# is at hand, must never have opened /proc/PID/maps of mmapwork.
# --no-tracefs runs ember in a private mount namespace where tracefs is
# not mounted (a fresh cloud VM, a busybox image): eBPF's sys_exit_mmap
# hook attaches by its tracefs id, so ember must mount it itself.
#
#   check-mmap.sh --ember PATH --work PATH [--backend bpf|kmod] [--label L]
#                 [--no-tracefs]
set -uo pipefail
. "$(dirname "$0")/../../lib.sh"	# t_without_tracefs
ember=agent/ember work=agent/gen/tests/mmapwork backend=auto label=host
wrap=()
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift ;;
	--work) work=$2; shift ;;
	--backend) backend=$2; shift ;;
	--label) label=$2; shift ;;
	--no-tracefs) wrap=(t_without_tracefs) ;;
	*) echo "check-mmap.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1: $2"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-mmap.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

st=
if command -v strace >/dev/null 2>&1; then
	st="strace -f -qq -e trace=openat,execve -o $tmp/strace"
fi
# not the session's first exec: the backend's first mapping record tells
# the agent that mappings come from the kernel (before it, an exec is
# snapshotted from /proc as without them)
"${wrap[@]}" env EMBER_BPF_VERBOSE=1 $st "$ember" record -b "$backend" -F 499 --format folded \
	-o "$tmp/out.folded" -- sh -c 'sleep 0.1; exec "$0" 1.5' "$work" \
	>"$tmp/work.out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
	fail "mmap_${label}_record" "ember record exited $rc: $(tail -n 3 "$tmp/err" | tr '\n' ' ')"
	exit 0
fi
pass "mmap_${label}_record"

# samples in cos and sin, symbolized, under lib_spin (libm mapped after
# the exec, then unmapped and mapped again). A root without libm's
# symbols for its ifunc targets (__cos_fma: .symtab only; a VM's copied
# libm) names them libm.so.6+OFFSET: there the frames must be
# attributed to libm, which only its mapping can tell.
if ! grep -q '^mmapwork;.*;\(__\)\?\(cos\|sin\)' "$tmp/out.folded" &&
	grep -q '^mmapwork;.*libm\.so\.6+0x' "$tmp/out.folded"; then
	n=$(awk '$1 ~ /^mmapwork;/ && $1 ~ /libm\.so\.6\+0x/ { s += $NF } END { print s + 0 }' "$tmp/out.folded")
	if [ "$n" -ge 40 ]; then
		pass "mmap_${label}_libm_attributed ($n samples, no symbols for libm's ifunc targets here)"
	else
		fail "mmap_${label}_libm_attributed" "$n samples in libm.so.6"
	fi
else
for fn in cos sin; do
	n=$(awk -v fn="$fn" '$1 ~ /^mmapwork;/ && $1 ~ ("lib_spin;(__)?" fn "([_a-z0-9]*)?(;|$)") { s += $NF } END { print s + 0 }' "$tmp/out.folded")
	if [ "$n" -ge 20 ]; then
		pass "mmap_${label}_${fn}_symbolized ($n samples)"
	else
		fail "mmap_${label}_${fn}_symbolized" "$n samples in $fn under lib_spin: $(grep '^mmapwork' "$tmp/out.folded" | sort -t' ' -k2 -nr | head -n 3 | tr '\n' '|')"
	fi
done
fi
# what the profile holds of it, for the log
grep '^mmapwork' "$tmp/out.folded" | sort -t' ' -k2 -nr | head -n 4 | sed 's/^/  info: /'

line=$(grep '^ember: kmaps:' "$tmp/err")
reads=$(sed -n 's/.*maps read \([0-9]*\) times from them.*/\1/p' <<<"$line")
if [ "${reads:-0}" -ge 1 ]; then
	pass "mmap_${label}_from_kernel (${line#ember: kmaps: })"
else
	fail "mmap_${label}_from_kernel" "${line:-no kmaps line}"
fi

if [ -n "$st" ]; then
	# after its exec (before it, the pid was a shell that was running
	# before the session's first mapping record)
	wpid=$(awk '/execve\("[^"]*mmapwork"/ { print $1; exit }' "$tmp/strace")
	n=$(awk -v p="\"/proc/$wpid/maps\"" '/execve\("[^"]*mmapwork"/ { on = 1 }
		on && index($0, p) { n++ } END { print n + 0 }' "$tmp/strace")
	if [ -n "$wpid" ] && [ "$n" -eq 0 ]; then
		pass "mmap_${label}_no_proc_maps (pid $wpid)"
	else
		fail "mmap_${label}_no_proc_maps" "pid ${wpid:-?}: $n opens of /proc/$wpid/maps"
	fi
fi
