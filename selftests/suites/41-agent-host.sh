#!/usr/bin/env bash
# ember record end to end on this host, through the backend --backend auto
# picks here (eBPF on a kernel without module support): the phases workload
# (CPU shares within 3 points, symbolized chains, kernel frames under the
# syscall phase), a 200 ms process, stdio/exit status pass-through, Ctrl-C,
# off-CPU and SVG. See selftests/agent/e2e/e2e.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

if ! out=$(make -s -j2 agent-e2e 2>&1); then
	t_fail agent_host_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	t_skip agent_host_e2e "needs root (CAP_BPF/CAP_PERFMON or the module)"
	exit 0
fi
status=$(agent/ember status)
if grep -q '^ember record will use: eBPF' <<<"$status"; then
	backend=bpf
elif grep -q '^ember record will use: the module' <<<"$status"; then
	backend=kmod
else
	t_skip agent_host_e2e "no backend can run here: $(tr '\n' ' ' <<<"$status")"
	exit 0
fi
t_pass agent_host_status_picks_$backend
# auto must say why it chose eBPF on a kernel without modules
if [ "$backend" = bpf ] && [ ! -e /proc/modules ]; then
	line=$(agent/ember record -d 0.2 -o /dev/null --format folded 2>&1 >/dev/null | head -1)
	if [ "$line" = "ember: kernel without loadable module support: using eBPF" ]; then
		t_pass agent_host_auto_falls_back_to_bpf
	else
		t_fail agent_host_auto_falls_back_to_bpf "first stderr line: $line"
	fi
fi
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/agent-host
rm -rf "$art"
selftests/agent/e2e/e2e.sh --backend "$backend" --ember agent/ember \
	--phases agent/gen/tests/ember-phases --out "$art"
