#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install what the
# build and the tests need, build everything, run every suite. Ends with
# "N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests load eBPF programs, create cgroups and boot VMs: they need root.
if [ "$(id -u)" -ne 0 ]; then
	exec sudo --preserve-env=CI,SUITES,EMBER_FULL,EMBER_VM_KERNELS,EMBER_DEBUG_KERNEL,EMBER_FLEET,EMBER_STRESS,EMBER_ARM64,EMBER_RT,EMBER_PYTHON_VM "$0" "$@"
fi
scripts/install-deps.sh
make -j"$(nproc)" all
exec selftests/run.sh
