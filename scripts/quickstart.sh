#!/usr/bin/env bash
# ember in one command: install what it needs, build it, record the whole
# system for a few seconds and write a flame graph you can open in a
# browser. ember picks its backend by itself: the ember module when it is
# loaded or loadable, otherwise eBPF (e.g. on kernels without module
# support), and says which on stderr; when neither can run it says why and
# what to do.
#
#   scripts/quickstart.sh [OUTPUT.svg]      (EMBER_SECONDS=10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-ember.svg}
secs=${EMBER_SECONDS:-10}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

scripts/install-deps.sh
make -j"$(nproc)" agent
echo "quickstart: recording the whole system for ${secs} s..." >&2
$SUDO agent/ember record -a -d "$secs" -o "$out"
echo "quickstart: flame graph written to $out (open it in a browser)" >&2
# Idle CPUs are not sampled (--idle includes them), so an idle machine
# gives a small graph: say how to profile real work.
echo "quickstart: an idle machine gives a small graph; to profile a program:" >&2
echo "  $SUDO agent/ember record -o prog.svg -- ./your-program args" >&2
