#!/usr/bin/env bash
# ember on arm64, in qemu-system-aarch64 (issue 23): cross-builds the agent,
# ember.ko and the ground-truth workloads with scripts/build-arm64.sh (its
# own build directory: this tree's x86-64 objects are not touched), boots
# Debian's arm64 kernels with selftests/vm/run-vm.sh --arch arm64 and runs
# selftests/agent/e2e/guest-arm64.sh there: the agent starts, ember record
# with the eBPF backend samples the workload with arm64 kernel stacks, the
# module does the same when it built (SKIP with the build error otherwise),
# then the arch-neutral checks of the x86-64 suites (e2e.sh, check-nofp.sh
# with gcc and clang builds, check-real.sh with Debian's arm64 python3.11,
# xz and openssl...) on the eBPF backend, and on the module when it built.
#
# Kernels: 6.1 (what CI runs); 6.1 and 6.12 with EMBER_ARM64=1; or the
# arm64 series named in EMBER_VM_KERNELS (6.1, 6.12; others are x86-only).
# EMBER_ARM64_CHECKS: the guest's check groups beyond the basic ones
# (guest-arm64.sh lists them): "e2e nofp real" by default, every group
# (+ oracle alloc lock faults) with EMBER_ARM64=1, "" for the basic ones.
# Run alone: SUITES="23-arm64-vm" selftests/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh
export EMBER_CACHE=${EMBER_CACHE:-$PWD/.cache}

kernels=6.1 checks="e2e nofp real"
if [ "${EMBER_ARM64:-}" = 1 ]; then
	kernels="6.1 6.12" checks="e2e nofp real oracle alloc lock faults"
fi
checks=${EMBER_ARM64_CHECKS-$checks}
if [ -n "${EMBER_VM_KERNELS:-}" ]; then
	kernels=""
	for k in $EMBER_VM_KERNELS; do
		case $k in 6.1 | 6.12 | 6.12-rt) kernels="$kernels $k" ;; esac
	done
	if [ -z "$kernels" ]; then
		t_skip arm64_vm "EMBER_VM_KERNELS='$EMBER_VM_KERNELS' names no arm64 series (6.1, 6.12)"
		exit 0
	fi
fi
for tool in qemu-system-aarch64 aarch64-linux-gnu-gcc clang; do
	if ! command -v $tool >/dev/null; then
		t_skip arm64_vm "no $tool: run scripts/install-deps.sh"
		exit 0
	fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/arm64-vm

# ------------------------------------------------------------------ build
mods=()
for k in $kernels; do mods+=(--module "$k"); done
start=$(date +%s)
if ! scripts/build-arm64.sh --quiet "${mods[@]}" >"$work/build.out" 2>"$work/build.err"; then
	t_fail arm64_vm_build "$(tail -n 3 "$work/build.err" | tr '\n' ' ')"
	exit 1
fi
t_pass arm64_vm_build
echo "# arm64 build: $(($(date +%s) - start)) s ($(sed -n 's/^tree=//p' "$work/build.out"))"
val() { sed -n "s/^$1=//p" "$work/build.out"; }
tree=$(val tree) tests=$(val tests)

mkdir -p "$work/agent"
cp "$(val agent)" "$(val preload)" selftests/agent/e2e/guest-arm64.sh \
	selftests/agent/e2e/e2e.sh selftests/unwind/check-nofp.sh \
	selftests/unwind/check-oracle.sh selftests/unwind/check-real.sh \
	selftests/alloc/check-alloc.sh selftests/alloc/alloc-common.sh \
	selftests/lock/check-lock.sh selftests/faults/check-faults.sh \
	selftests/agent/e2e/check-python-rest.sh selftests/agent/e2e/pyanon.py \
	"$work/agent/"
cp -r "$tests"/. "$work/agent/"
# bad input: an x86-64 ember.ko (the amd64 package's module copied onto an
# arm64 machine); the guest expects it refused and eBPF used instead
if kdir86=$(scripts/fetch-kernels.sh --kdir 6.1 2>/dev/null) &&
	make -s module KDIR="$kdir86" >"$work/kmod-x86.log" 2>&1; then
	cp ember.ko "$work/agent/ember-x86_64.ko"
else
	echo "# no x86-64 ember.ko for the wrong-architecture check: $(tail -n 1 "$work/kmod-x86.log" 2>/dev/null)"
fi
# Debian's arm64 programs for check-real.sh (scripts/fetch-arm64-guest.sh):
# the files python3.11 loads for its script, by their arm64 names (the
# guest compiles the .py files itself: the root has no __pycache__)
guest_files=(--host-file /bin/bash)
while IFS= read -r f; do
	case $f in *.pyc) continue ;; esac
	guest_files+=(--host-file "${f//x86_64-linux-gnu/aarch64-linux-gnu}")
done < <(selftests/unwind/check-real.sh --python-files
	selftests/agent/e2e/check-python-rest.sh --python-files)

for k in $kernels; do
	ko=$(val "module_$k")
	modopt=()
	case $ko in
	/*) modopt=(--module "$ko") ;;
	*)
		log=${ko#failed: }
		t_skip "arm64_${k}_kmod" "ember.ko did not build for arm64 $k: $(grep -m 1 -E 'error' "$log" 2>/dev/null | sed "s|$tree/||" | cut -c1-200) (log: $log)"
		;;
	esac
	rm -rf "${art:?}/$k"
	mkdir -p "$art/$k"
	selftests/vm/run-vm.sh --arch arm64 --kernel "$k" --payload "$work/agent" \
		"${modopt[@]}" "${guest_files[@]}" \
		--cmd "EMBER_ARM64_CHECKS='$checks' sh /payload/agent/guest-arm64.sh" \
		--smp 2 --mem 1G --timeout "${EMBER_ARM64_VM_TIMEOUT:-900}" \
		--out "$art/$k" --log "$art/$k/console.log" --result "$work/result-$k" \
		>"$art/$k/guest.out" 2>"$art/$k/run-vm.err"
	rc=$?
	echo "# arm64 $k: /init at $(vm_result "$work/result-$k" boot_s) s, VM $(vm_result "$work/result-$k" total_s | cut -d. -f1) s"
	# the guest's test lines, named per kernel: arm64_<series>_<test>
	sed -n -E "s/^(PASS|FAIL|SKIP): arm64_([^:]*)(.*)/\1: arm64_${k}_\2\3/p" "$art/$k/guest.out"
	grep '^# ' "$art/$k/guest.out"
	problems=$(vm_result "$work/result-$k" kernel_problems 2>/dev/null)
	if [ -n "$problems" ] && [ "$problems" != 0 ]; then
		t_fail "arm64_${k}_clean_run" "kernel problem in the guest log (log: $art/$k/console.log)"
		t_kernel_log_excerpt "$art/$k/console.log"
	elif [ "$rc" = 0 ]; then
		t_pass "arm64_${k}_clean_run"
	else
		t_fail "arm64_${k}_clean_run" "run-vm exit $rc: $(tail -n 2 "$art/$k/run-vm.err" | tr '\n' ' ')"
	fi
	if ! grep -qE '^(PASS|FAIL): ' "$art/$k/guest.out"; then
		t_fail "arm64_${k}_guest_reported" "the guest printed no test result; last lines: $(tail -n 3 "$art/$k/guest.out" | tr '\n' ' ' | cut -c1-300)"
	fi
done
