#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install what the
# build and the tests need, build everything, run every suite. Ends with
# "N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)" all
exec selftests/run.sh
