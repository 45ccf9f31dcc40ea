#!/usr/bin/env bash
# Install every Debian package ember needs to build, run and test.
# Idempotent: packages already present are skipped, apt is updated at most
# once per hour. Runs as root (CI, or a newcomer with sudo).
set -euo pipefail

PKGS=(
	# toolchain and kernel build
	build-essential gcc clang llvm make pkg-config bc flex bison libssl-dev
	libelf-dev kmod cpio busybox-static sparse dkms linux-source-6.1
	# pahole: the 6.12 kbuild (bookworm-backports) runs it for module BTF
	pahole
	# agent libraries
	libnl-3-dev libnl-genl-3-dev libdw-dev libdebuginfod-dev
	libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
	libcurl4-openssl-dev zlib1g-dev libzstd-dev libcap-dev
	# eBPF backend
	libbpf-dev bpftool
	# cross-building for arm64 (scripts/cross.mk): amd64 packages, they
	# remove nothing; the arm64 libraries come from fetch-arm64-sysroot.sh
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	# the arm64 VM suite's C++ allocation workload (scripts/build-arm64.sh)
	g++-aarch64-linux-gnu
	# fuzzers (selftests/fuzz): libFuzzer and the sanitizer runtimes
	libclang-rt-14-dev
	# tests: VMs, decoders, browser for the flame graph
	qemu-system-x86 qemu-utils libcmocka-dev python3 python3-protobuf chromium
	# arm64 VMs (selftests/vm/run-vm.sh --arch arm64): qemu-system-aarch64;
	# the guest's busybox and kernels are fetched into the cache, not installed
	qemu-system-arm
	curl openssl
	systemd binutils file
	# symbolizer: demangler (libiberty), C++ test program, Go test program
	# (stripped Go binaries are named from .gopclntab: suite 11)
	libiberty-dev g++ debuginfod golang-go
	# packaging
	debhelper dh-dkms devscripts rpm fakeroot man-db
	# make bench: the profilers ember is compared with (bpfcc-tools:
	# offwaketime, for -e lock --waker)
	linux-perf libbpf-tools bpfcc-tools
	# PREEMPT_RT latency with ember on and off (selftests/suites/36-rt-vm.sh)
	rt-tests
	# -e alloc against other allocators (selftests/suites/16-alloc-sampler.sh)
	libjemalloc2 libtcmalloc-minimal4
)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PKGS[@]} packages present"
	exit 0
fi

stamp=/var/lib/apt/periodic/ember-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +60 2>/dev/null)" ]; then
	$SUDO apt-get update -q
	$SUDO mkdir -p "$(dirname "$stamp")" && $SUDO touch "$stamp"
fi
echo "install-deps: installing ${missing[*]}"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
