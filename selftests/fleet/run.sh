#!/usr/bin/env bash
# selftests/fleet/run.sh: the fleet proof (issue 17). Install, boot,
# upgrade and remove ember on a real Debian 12 system with systemd as PID
# 1, under qemu (TCG), with no network device.
#
#   selftests/fleet/run.sh [--keep] [--out DIR] [--boot-timeout S]
#
# 1. scripts/build-fleet-image.sh: the Debian image (cached in .cache/fleet/)
# 2. make deb twice: ember + ember-dkms at ./VERSION (V1) and at V1 with its
#    last number plus one (V2, PKG_VERSION=...), the upgrade
# 3. a scenario disk (ext4, label FLEET): selftests/fleet/guest/, the
#    packages, selftests/otlp/receiver.py and check_otlp.py with Python
#    modules protoc made from ember's .proto (v1.11)
# 4. boots a sparse copy of the image until the guest says it is done; each
#    boot runs the next stage of selftests/fleet/guest/step.sh (see there)
#    through fleet-test.service. Like Debian's grub, every boot takes the
#    newest kernel in the image's /boot (read with debugfs, no mount).
#
# Output: one line per check, "PASS: name" or "FAIL: name: why", from the
# guest (second serial port) and from here; "info:" lines with timings;
# last, "N passed, N failed". Exit status 0 when nothing failed.
# Logs (console per boot, the guest's journal and dmesg per stage, apt
# logs): --out DIR (default selftests/artifacts/fleet/). --keep keeps the
# booted disk images there too (about 3 GB).
#
# Environment: EMBER_CACHE, EMBER_FLEET_MEM (2G), EMBER_FLEET_SMP (2).
# Needs root (the image build), qemu-system-x86_64, e2fsprogs, protoc.
# qemu and the builds run under `nice -n 19`.
set -uo pipefail
cd "$(dirname "$0")/../.."
TOP=$PWD

keep=0 out=$TOP/selftests/artifacts/fleet out_given=0 boot_timeout=3600 max_boots=6
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1; shift ;;
	--out) out=$(realpath -m "$2"); out_given=1; shift 2 ;;
	--boot-timeout) boot_timeout=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

passed=0 failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1: ${2:-failed}"; failed=$((failed + 1)); }
info() { echo "info: $*"; }
summary() {
	info "total $(($(date +%s) - t_all)) s"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}
t_all=$(date +%s)

for tool in qemu-system-x86_64 debugfs mkfs.ext4 protoc; do
	command -v $tool >/dev/null || { fail fleet-prerequisites "$tool missing (scripts/install-deps.sh)"; summary; }
done
[ "$(id -u)" = 0 ] || { fail fleet-prerequisites "needs root (debootstrap for the image)"; summary; }

CACHE=${EMBER_CACHE:-$TOP/.cache}
mkdir -p "$CACHE/fleet"
exec {lock_fd}>"$CACHE/fleet/.run.lock"
flock -n "$lock_fd" || { info "another fleet run holds $CACHE/fleet/.run.lock: waiting"; flock "$lock_fd"; }

# --out DIR is emptied: only a new directory or one a previous run made
if [ "$out_given" = 1 ] && [ ! -e "$out/.fleet-run" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
	fail fleet-out "--out $out exists and was not made by this script: not emptying it"
	summary
fi
rm -rf "$out"
mkdir -p "$out"
: >"$out/.fleet-run"
W=$out/work
mkdir -p "$W"

# ------------------------------------------------------------------ image
t=$(date +%s)
if ! base=$(scripts/build-fleet-image.sh 2>"$out/image-build.log"); then
	fail fleet-image "scripts/build-fleet-image.sh failed: $(tail -n 3 "$out/image-build.log" | tr '\n' ' ')"
	summary
fi
info "image $base ready in $(($(date +%s) - t)) s ($(sed -n 's/^KERNEL=/kernel /p; s/^BUILD_SECONDS=\(.*\)/built in \1 s/p; s/^BUILT=/at /p' "$(dirname "$base")/info" | paste -sd' '))"

# --------------------------------------------------------------- packages
V1=$(cat VERSION)
V2=$(echo "$V1" | awk -F. -v OFS=. '{ $NF = $NF + 1; print }')
t=$(date +%s)
for v in "$V1" "$V2"; do
	if ! nice -n 19 make -s deb PKG_VERSION="$v" DEB_OUT="build/fleet/deb-$v" >"$out/make-deb-$v.log" 2>&1 ||
		[ ! -f "build/fleet/deb-$v/ember_${v}_amd64.deb" ] || [ ! -f "build/fleet/deb-$v/ember-dkms_${v}_all.deb" ]; then
		fail fleet-packages "make deb PKG_VERSION=$v: $(tail -n 3 "$out/make-deb-$v.log" | tr '\n' ' ')"
		summary
	fi
done
info "packages $V1 and $V2 built in $(($(date +%s) - t)) s"

# ----------------------------------------------------------- scenario disk
D=$W/disk
mkdir -p "$D"/{guest,debs/v1,debs/v2,otlp/py,results,state}
cp selftests/fleet/guest/step.sh selftests/fleet/guest/spin.c "$D/guest/"
cp packaging/examples/dkms-mok-signing.conf "$D/guest/"
cp "build/fleet/deb-$V1/ember_${V1}_amd64.deb" "build/fleet/deb-$V1/ember-dkms_${V1}_all.deb" "$D/debs/v1/"
cp "build/fleet/deb-$V2/ember_${V2}_amd64.deb" "build/fleet/deb-$V2/ember-dkms_${V2}_all.deb" "$D/debs/v2/"
cp selftests/otlp/receiver.py selftests/otlp/check_otlp.py "$D/otlp/"
# shellcheck disable=SC2046
protoc -Iproto --python_out="$D/otlp/py" $(find proto/opentelemetry -name '*.proto') ||
	{ fail fleet-scenario-disk "protoc --python_out failed"; summary; }
cat >"$D/config" <<EOF
V1='$V1'
V2='$V2'
PORT=4318
METRICS=9464
MOK_CN='ember fleet test MOK'
EOF
truncate -s 2G "$W/fleet.img"
mkfs.ext4 -q -F -L FLEET -d "$D" "$W/fleet.img" || { fail fleet-scenario-disk "mkfs.ext4 -d failed"; summary; }

# A copy of the image for this run: the cached one stays pristine.
t=$(date +%s)
cp --sparse=always "$base" "$W/root.img"
info "image copied in $(($(date +%s) - t)) s"

# Newest kernel in the image's /boot, and its initrd, out with debugfs.
pick_kernel() {
	local k
	k=$(debugfs -R 'ls -p /boot' "$W/root.img" 2>/dev/null | tr '/' '\n' | grep '^vmlinuz-' |
		sed 's/^vmlinuz-//' | sort -V | tail -n 1)
	[ -n "$k" ] || return 1
	rm -f "$W/vmlinuz" "$W/initrd"
	debugfs -R "dump -p /boot/vmlinuz-$k $W/vmlinuz" "$W/root.img" >/dev/null 2>&1 &&
		debugfs -R "dump -p /boot/initrd.img-$k $W/initrd" "$W/root.img" >/dev/null 2>&1 &&
		[ -s "$W/vmlinuz" ] && [ -s "$W/initrd" ] || return 1
	echo "$k"
}

# ------------------------------------------------------------------ boots
done_=0
for n in $(seq 1 $max_boots); do
	# a guest that died leaves its journal unreplayed: debugfs would read
	# a stale /boot
	if ! dumpe2fs -h "$W/root.img" 2>/dev/null | grep -q '^Filesystem state: *clean$'; then
		e2fsck -p "$W/root.img" >>"$out/e2fsck.log" 2>&1
	fi
	if ! kver=$(pick_kernel); then
		fail "boot-$n" "no kernel and initrd in the image's /boot"
		break
	fi
	t=$(date +%s)
	: >"$out/results-$n.txt"
	# shellcheck disable=SC2054 # commas are qemu's
	timeout -k 10 "$boot_timeout" nice -n 19 qemu-system-x86_64 \
		-accel tcg,thread=single -nodefaults -display none -no-reboot \
		-m "${EMBER_FLEET_MEM:-2G}" -smp "${EMBER_FLEET_SMP:-2}" -nic none \
		-kernel "$W/vmlinuz" -initrd "$W/initrd" \
		-append "root=/dev/vda ro console=ttyS0 quiet panic=-1 cryptomgr.notests" \
		-drive file="$W/root.img",format=raw,if=virtio,cache=unsafe \
		-drive file="$W/fleet.img",format=raw,if=virtio,cache=unsafe \
		-serial file:"$out/console-$n.log" -serial file:"$out/results-$n.txt" \
		</dev/null >"$out/qemu-$n.log" 2>&1
	qrc=$?
	secs=$(($(date +%s) - t))
	tr -d '\r' <"$out/results-$n.txt" >"$out/results-$n.clean" && mv "$out/results-$n.clean" "$out/results-$n.txt"
	grep -E '^(PASS|FAIL|INFO): ' "$out/results-$n.txt" | sed 's/^INFO: /info: /'
	passed=$((passed + $(grep -c '^PASS: ' "$out/results-$n.txt")))
	failed=$((failed + $(grep -c '^FAIL: ' "$out/results-$n.txt")))
	stage_s=$(sed -n 's/^FLEET-TIME: //p' "$out/results-$n.txt")
	info "boot $n: kernel $kver, qemu ${secs} s (${stage_s:-no step time})"
	if grep -q '^FLEET-DONE' "$out/results-$n.txt"; then
		done_=1
		break
	elif ! grep -q '^FLEET-NEXT: reboot' "$out/results-$n.txt"; then
		why="qemu status $qrc"
		[ "$qrc" != 124 ] && [ "$qrc" != 137 ] || why="timeout after ${boot_timeout} s"
		fail "boot-$n" "the guest did not finish its step ($why): console $out/console-$n.log: $(tail -n 3 "$out/console-$n.log" | tr -d '\r' | tr '\n' ' ' | cut -c1-300)"
		break
	fi
done
[ "$done_" = 1 ] || [ "$n" != "$max_boots" ] || fail fleet-scenario "not done after $max_boots boots"

# The guest's logs (journal and dmesg per stage, apt logs) from its disk.
mkdir -p "$out/guest"
debugfs -R "rdump /results $out/guest" "$W/fleet.img" >/dev/null 2>&1
# Kernel problems (the VM harness's pattern) in any stage's kernel log.
for f in "$out"/guest/results/dmesg-stage*.txt; do
	[ -e "$f" ] || continue
	s=$(basename "$f" .txt)
	probs=$(grep -E -f selftests/vm/kernel-problems.ere "$f" | head -n 3)
	if [ -z "$probs" ]; then
		pass "kernel-log-${s#dmesg-}"
	else
		fail "kernel-log-${s#dmesg-}" "$(echo "$probs" | tr '\n' ' ' | cut -c1-300)"
	fi
done

if [ "$keep" = 1 ]; then
	info "disk images kept: $W/root.img $W/fleet.img"
else
	rm -rf "$W"
fi
info "logs: $out"
summary
