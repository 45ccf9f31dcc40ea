#!/usr/bin/env bash
# Cross-build ember for arm64 beside the host build: the tree's sources are
# mirrored into a build directory of their own under the cache, where
# `make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-` runs (incremental on
# rerun), so this tree's x86-64 objects are never touched (a tree holds one
# architecture's objects: agent/gen/build-arch).
#
#   scripts/build-arm64.sh [--module SERIES]... [--no-tests] [-j N] [--quiet]
#   scripts/build-arm64.sh --dir       print the build directory, build nothing
#
# Builds: agent/ember (with the eBPF object), preload/libember-alloc.so, and
# unless --no-tests the ground-truth workloads for the arm64 VM tests (below).
# --module SERIES (6.1, 6.12; repeatable): also ember.ko against that arm64
# kernel's headers (scripts/fetch-kernels.sh --arch arm64 --kdir SERIES).
# A module that does not build is reported and does not fail the script
# (kmod/ is being ported; the VM suite skips its module tests then).
#
# Prints KEY=VALUE lines on stdout (progress and make's output on stderr):
#   tree=DIR             the mirrored tree with the arm64 objects
#   agent=FILE           DIR/agent/ember (aarch64)
#   preload=FILE         DIR/preload/libember-alloc.so
#   bpf=FILE             DIR/bpf/.output/arm64/ember.bpf.o
#   tests=DIR            the workloads (layout below), when built
#   module_SERIES=FILE   ember.ko for that kernel, or "failed: LOG"
#
# tests/ (payload layout of selftests/suites/40-agent-vm.sh where one exists):
#   ember-phases faultwork       e2e ground truth (clang, frame pointers)
#   unwind-gcc/ unwind-clang/    nofp-work + libnofp_a/b.so, -O2 without FP
#   unwind-gcc-fp/ unwind-clang-fp/   the same with frame pointers (leaf too)
#   jit-work lockwork lockwork-fp futexstorm allocwork allocwork-static
#   allocwork-own allocwork-cxx semwatch   as the host's make targets build them
#   fpbusy sysbusy offcpu-work lockwork-mini allocprobe (+ .nm) ticker
#   exitrace runas               selftests/kmod's guest programs
#   fp-burn syscall-burn offcpu-wait lock-wait   selftests/bpf's workloads
#
# The build directory: $EMBER_CACHE/build-arm64/<tree name>-<hash of its
# path> (one per worktree, kept between runs), or EMBER_ARM64_BUILD_DIR.
# Mirrored: what `git ls-files -co --exclude-standard` lists (tracked and
# new files, no build outputs); files gone from the tree are removed from
# the mirror. Needs scripts/install-deps.sh (gcc-aarch64-linux-gnu, clang).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
export EMBER_CACHE=${EMBER_CACHE:-$TOP/.cache}
CROSS=aarch64-linux-gnu-
jobs=2 tests=1 quiet=0 only_dir=0
modules=()

die() { echo "build-arm64: $*" >&2; exit 1; }
log() { [ "$quiet" = 1 ] || echo "build-arm64: $*" >&2; }
while [ $# -gt 0 ]; do
	case $1 in
	--module) modules+=("$2"); shift 2 ;;
	--no-tests) tests=0; shift ;;
	-j) jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	--quiet) quiet=1; shift ;;
	--dir) only_dir=1; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done

D=${EMBER_ARM64_BUILD_DIR:-$EMBER_CACHE/build-arm64/$(basename "$TOP")-$(printf '%s' "$TOP" | sha1sum | cut -c1-8)}
if [ "$only_dir" = 1 ]; then
	echo "$D"
	exit 0
fi
command -v ${CROSS}gcc >/dev/null || die "no ${CROSS}gcc: run scripts/install-deps.sh"
command -v clang >/dev/null || die "no clang: run scripts/install-deps.sh"
[ "$tests" = 0 ] || command -v ${CROSS}g++ >/dev/null || die "no ${CROSS}g++: run scripts/install-deps.sh"
S=$D/src
mkdir -p "$S"
exec {lock_fd}>"$D/.lock"
flock "$lock_fd"

# ------------------------------------------------------------------ mirror
# cp -u: a file is copied only when the tree's copy is newer, timestamps
# kept, so make in the mirror rebuilds what changed and nothing else.
(cd "$TOP" && git ls-files -z -co --exclude-standard) | LC_ALL=C sort -z >"$D/manifest.new"
(cd "$TOP" && xargs -0 -r cp -u -p -d --parents -t "$S" <"$D/manifest.new") 2>"$D/mirror.err" || {
	# a listed file deleted but not yet staged: cp says so, nothing else
	grep -v 'No such file or directory' "$D/mirror.err" >&2 && die "mirroring the tree failed"
	true
}
if [ -e "$D/manifest" ]; then
	# files that left the tree leave the mirror (make must not see them)
	comm -z -23 "$D/manifest" "$D/manifest.new" | (cd "$S" && xargs -0 -r rm -f)
fi
mv "$D/manifest.new" "$D/manifest"

MK=(make -C "$S" -j"$jobs" ARCH=arm64 "CROSS_COMPILE=$CROSS")
[ "$quiet" = 0 ] || MK+=(-s)
run() { # LOGNAME CMD...: output to the log (and stderr unless --quiet)
	local name=$1
	shift
	if [ "$quiet" = 1 ]; then
		"$@" >"$D/$name.log" 2>&1
	else
		"$@" 2>&1 | tee "$D/$name.log" >&2
		return "${PIPESTATUS[0]}"
	fi
}

# the eBPF build takes its vmlinux.h from the arm64 6.1 kernel's BTF
scripts_kernels=("$TOP/scripts/fetch-kernels.sh" --arch arm64)
"${scripts_kernels[@]}" --version 6.1 >/dev/null || die "cannot fetch the arm64 6.1 kernel (its BTF makes the eBPF object's vmlinux.h)"

log "building the agent in $S"
run build "${MK[@]}" agent bpf || die "agent build failed (log: $D/build.log)"
echo "tree=$S"
echo "agent=$S/agent/ember"
echo "preload=$S/preload/libember-alloc.so"
echo "bpf=$S/bpf/.output/arm64/ember.bpf.o"

# ------------------------------------------------------------------ module
for k in "${modules[@]}"; do
	kdir=$("${scripts_kernels[@]}" --kdir "$k") || die "cannot fetch the arm64 $k kernel headers"
	mkdir -p "$D/ko/$k"
	rm -f "$D/ko/$k/ember.ko"
	log "building ember.ko for arm64 $k"
	if run "module-$k" "${MK[@]}" module KDIR="$kdir" && cp "$S/ember.ko" "$D/ko/$k/ember.ko"; then
		echo "module_$k=$D/ko/$k/ember.ko"
	else
		echo "module_$k=failed: $D/module-$k.log"
		log "ember.ko for arm64 $k did not build: $(grep -m 2 -E 'error' "$D/module-$k.log" | tr '\n' ' ')"
	fi
done

[ "$tests" = 1 ] || exit 0

# ------------------------------------------------------------------- tests
# The make targets whose rules use $(CC) (the cross gcc under ARCH=arm64)
run build-tests "${MK[@]}" lock-work agent/gen/tests/allocwork agent/gen/tests/allocwork-static \
	agent/gen/tests/allocwork-own agent/gen/tests/semwatch ||
	die "test workload build failed (log: $D/build-tests.log)"

# The rest name gcc or $(CLANG) (the host's) in their rules: built here with
# the same flags for aarch64. clang finds the cross toolchain's glibc and
# crt files (/usr/aarch64-linux-gnu) by itself with --target.
T=$D/tests
mkdir -p "$T"
GCC=${CROSS}gcc
CLANG=(clang --target=aarch64-linux-gnu)
FP=(-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
cc_for() { if [ "$1" = clang ]; then echo "${CLANG[*]}"; else echo "$GCC"; fi; }
# build OUT SRC... -- FLAGS: only when a source is newer than OUT
build() {
	local out=$1 cc=$2 srcs=() s
	shift 2
	while [ "$1" != -- ]; do srcs+=("$S/$1"); shift; done
	shift
	if [ -e "$out" ]; then
		local stale=0
		for s in "${srcs[@]}"; do [ "$s" -nt "$out" ] && stale=1; done
		[ "$stale" = 1 ] || return 0
	fi
	mkdir -p "$(dirname "$out")"
	log "  CC      ${out#"$D"/}"
	# sources first: the libraries of FLAGS (-lnofp_a) resolve them
	# shellcheck disable=SC2086 # cc is "clang --target=..." or one word
	if ! $cc "${srcs[@]}" "$@" -o "$out.tmp" 2>>"$D/build-tests.log"; then
		rm -f "$out.tmp"
		die "$out did not build: $(grep -m 2 -E 'error' "$D/build-tests.log" | tr '\n' ' ') (log: $D/build-tests.log)"
	fi
	mv "$out.tmp" "$out"
}
build_tests() {
	# selftests/selftests.mk unwind-work: no frame pointers, and the same
	# with them (leaf too: clang honours it, gcc 12 does not)
	for c in gcc clang; do
		for v in "" -fp; do
			d=$T/unwind-$c$v
			if [ -n "$v" ]; then
				fl=(-O2 -g "${FP[@]}")
			else
				fl=(-O2 -g -fomit-frame-pointer)
			fi
			build "$d/libnofp_a.so" "$(cc_for $c)" selftests/unwind/nofp_liba.c -- "${fl[@]}" -fPIC -shared
			build "$d/libnofp_b.so" "$(cc_for $c)" selftests/unwind/nofp_libb.c -- "${fl[@]}" -fPIC -shared
			# shellcheck disable=SC2016 # $ORIGIN is the loader's
			build "$d/nofp-work" "$(cc_for $c)" selftests/unwind/nofp_work.c -- "${fl[@]}" \
				-L"$d" -lnofp_a -Wl,-rpath,'$ORIGIN' -ldl
		done
	done
	build "$T/jit-work" "$GCC" selftests/unwind/jit_work.c -- -O2 -g -fomit-frame-pointer
	# agent/agent.mk: the e2e phases (clang, FP) and faultwork (gcc, FP)
	build "$T/ember-phases" "${CLANG[*]}" selftests/agent/e2e/phases.c -- -O1 -g "${FP[@]}" -pthread -Wall
	build "$T/faultwork" "$GCC" selftests/faults/faultwork.c -- -O2 -g "${FP[@]}" -Wall
	# kmod/kmod.mk's guest programs (compat32 is an x86 32-bit program:
	# its arm64 counterpart, AArch32, is kmod's to add)
	KG=(-std=gnu11 -Wall -Wextra -Werror -O2 -g -I"$S/include")
	KGFP=(-std=gnu11 -Wall -Wextra -Werror -O1 -g -no-pie -fno-optimize-sibling-calls "${FP[@]}")
	for p in runas ticker; do build "$T/$p" "$GCC" "selftests/kmod/$p.c" -- "${KG[@]}"; done
	build "$T/exitrace" "$GCC" selftests/kmod/exitrace.c -- "${KG[@]}" -pthread
	for p in fpbusy sysbusy offcpu-work lockwork-mini; do
		build "$T/$p" "${CLANG[*]}" "selftests/kmod/$p.c" -- "${KGFP[@]}" -pthread
	done
	build "$T/allocprobe" "${CLANG[*]}" selftests/kmod/allocprobe.c -- "${KGFP[@]}"
	for p in fpbusy sysbusy offcpu-work lockwork-mini allocprobe; do
		[ "$T/$p.nm" -nt "$T/$p" ] || ${CROSS}nm -n "$T/$p" >"$T/$p.nm"
	done
	# bpf/bpf.mk's workloads (clang, FP everywhere)
	for p in fp-burn syscall-burn offcpu-wait lock-wait; do
		build "$T/$p" "${CLANG[*]}" "selftests/bpf/$p.c" -- -O1 -g "${FP[@]}" -fno-inline -Wall -Werror -lpthread
	done
	# preload/preload.mk's C++ allocator workload ($(CXX) there: the host's)
	build "$T/allocwork-cxx" ${CROSS}g++ selftests/alloc/allocwork-cxx.cc -- -std=c++17 -O2 -g -fomit-frame-pointer
	# the make-built ones, under the same names as the x86 payload
	for p in lockwork lockwork-fp futexstorm allocwork allocwork-static allocwork-own semwatch; do
		cp -p "$S/agent/gen/tests/$p" "$T/$p"
	done
}
build_tests
# every program is aarch64 (a host compiler slipping in would show here)
for f in "$T"/* "$T"/*/*; do
	if [ ! -f "$f" ] || [ "${f%.nm}" != "$f" ]; then continue; fi
	file -L "$f" | grep -q 'ARM aarch64' || die "$f is not an aarch64 program"
done
echo "tests=$T"
