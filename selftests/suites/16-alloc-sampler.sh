#!/usr/bin/env bash
# The in-process allocation sampler (preload/ember_alloc.c) on its own:
# unbiased weights per size class, in-use bytes after frees, silence when
# detached, threads and fork (selftests/alloc/alloc_sampler_test.c), and
# that a real program runs unchanged with it preloaded.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

if ! out=$(make -s -j2 alloc-sampler 2>&1); then
	t_fail alloc_sampler_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
t_pass alloc_sampler_build
LD_PRELOAD=$PWD/preload/libember-alloc.so EMBER_ALLOC_RATE=16384 \
	agent/gen/tests/alloc-sampler-test
# Real programs, preloaded, attached or not: same output as without.
want=$(printf 'b\na\nc\n' | sort | sha256sum)
got=$(printf 'b\na\nc\n' | LD_PRELOAD=$PWD/preload/libember-alloc.so sort | sha256sum)
t_check alloc_sampler_sort_unchanged test "$want" = "$got"
t_check alloc_sampler_python_runs env LD_PRELOAD=$PWD/preload/libember-alloc.so \
	EMBER_ALLOC_RATE=1024 python3 -c 'import json; json.dumps([list(range(1000))] * 100)'
