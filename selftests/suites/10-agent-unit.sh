#!/usr/bin/env bash
# Agent unit tests: record decoding (corrupt and fuzzed input), aggregation
# bounds, the folded writer, ember record's command line; plus CLI smoke
# tests of the built binary and a -Werror build of every agent source.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

if ! out=$(make -s -j2 agent-tests 2>&1); then
	t_fail agent_tests_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
t_pass agent_tests_build

for t in agent/gen/tests/test_*; do
	[ -x "$t" ] || continue
	"$t"
	rc=$?
	[ $rc -eq 0 ] || echo "# $t exited with $rc"
done

# The process model is shared by threads: its test (pid reuse, release,
# the cap, malformed /proc, two threads at once) again under
# ThreadSanitizer, built from proc/'s own files.
tsan=agent/gen/tsan/test_proc
mkdir -p agent/gen/tsan
if gcc -std=gnu11 -O1 -g -fsanitize=thread -D_GNU_SOURCE -Iagent -Iinclude \
	-Iselftests/agent -o "$tsan" selftests/agent/test_proc.c \
	agent/proc/proc.c agent/proc/proc_read.c agent/proc/proc_maps.c \
	agent/proc/container.c agent/lib/safe_file.c agent/lib/hash_index.c \
	-lpthread >/dev/null 2>&1; then
	t_check proc_model_tsan bash -c "TSAN_OPTIONS=halt_on_error=1:exitcode=66 $tsan 2>&1 | { ! grep -E 'FAIL|ThreadSanitizer'; }; [ \${PIPESTATUS[0]} -eq 0 ]"
else
	t_fail proc_model_tsan "cannot build test_proc with -fsanitize=thread"
fi

# kmaps is fed by the reader thread and read by two others: the same
tsan=agent/gen/tsan/test_kmaps
if gcc -std=gnu11 -O1 -g -fsanitize=thread -D_GNU_SOURCE -Iagent -Iinclude \
	-Iselftests/agent -o "$tsan" selftests/agent/test_kmaps.c \
	agent/proc/kmaps.c agent/proc/proc_maps.c \
	agent/lib/safe_file.c agent/lib/hash_index.c -lpthread >/dev/null 2>&1; then
	t_check kmaps_tsan bash -c "TSAN_OPTIONS=halt_on_error=1:exitcode=66 $tsan 2>&1 | { ! grep -E 'FAIL|ThreadSanitizer'; }; [ \${PIPESTATUS[0]} -eq 0 ]"
else
	t_fail kmaps_tsan "cannot build test_kmaps with -fsanitize=thread"
fi

# -Werror: the standard for user-space C (the default build does not stop
# everyone on a warning, this test reports it).
flags=$(make -s --no-print-directory -p -n agent/ember 2>/dev/null |
	sed -n 's/^AGENT_CFLAGS := //p' | head -1)
bad=()
for src in agent/*.c agent/*/*.c; do
	# agent/gen/ is generated code; agent/*.c matches nothing today.
	case $src in agent/gen/*) continue ;; esac
	[ -e "$src" ] || continue
	gcc $(eval echo "$flags") -Werror -c -o /dev/null "$src" >/dev/null 2>&1 || bad+=("$src")
done
if [ ${#bad[@]} -eq 0 ]; then
	t_pass agent_werror_clean
else
	t_fail agent_werror_clean "warnings in ${bad[*]}"
fi

# Layout (scripts/check-layout.py): every include names its folder and is
# one its folder's README allows ("May call:"); no include or call circles.
t_check layout_folder_rules scripts/check-layout.py rules
t_check layout_no_include_circles scripts/check-layout.py circles
t_check layout_no_call_circles_agent bash -c 'scripts/check-layout.py calls $(ls agent/*/*.o | grep -v "^agent/gen/")'
# ... and the checker catches what it is for: a planted bad include, a bare
# one, and a planted circle, in a copy of the tree.
layout_plant() {
	local what=$1 plant=$2 expect=$3 tmp out
	tmp=$(mktemp -d)
	mkdir -p "$tmp/agent" "$tmp/kmod" "$tmp/include"
	cp -r agent/*/ "$tmp/agent/" && cp -r include/. "$tmp/include/" && cp kmod/*.[ch] "$tmp/kmod/"
	rm -rf "$tmp/agent/gen"
	eval "$plant"
	out=$(scripts/check-layout.py --root "$tmp" "$what")
	local rc=$?
	rm -rf "$tmp"
	[ $rc -ne 0 ] && grep -q -- "$expect" <<<"$out"
}
t_check layout_plant_bad_include layout_plant rules \
	'sed -i "0,/#include \"/s//#include \"output\/output_otlp.h\"\n&/" "$tmp/agent/proc/proc.c"' \
	'agent/proc/proc.c: #include "output/output_otlp.h": agent/proc/README.md does not allow output/'
t_check layout_plant_bare_include layout_plant rules \
	'echo "#include \"proc.h\"" >>"$tmp/agent/proc/proc_maps.c"' \
	'does not name its folder'
t_check layout_plant_include_circle layout_plant circles \
	'echo "#include \"lib/planted_b.h\"" >"$tmp/agent/lib/planted_a.c"; echo "#include \"lib/planted_a.h\"" >"$tmp/agent/lib/planted_b.c"; touch "$tmp/agent/lib/planted_a.h" "$tmp/agent/lib/planted_b.h"' \
	'include circle: agent/lib/planted_a <-> agent/lib/planted_b'

# The exporter's branches for libcurl < 7.85 / 7.66 (CURLOPT_PROTOCOLS,
# Retry-After from the headers) compile -Werror too, forced on this libcurl.
t_check otlp_export_old_curl_werror bash -c "gcc $flags -DEMBER_FORCE_OLD_CURL -Werror -c -o /dev/null agent/export/otlp_export.c && gcc $flags -DEMBER_FORCE_OLD_CURL -Werror -S -o - agent/export/otlp_export.c | grep -q on_header"

E=agent/ember
t_check cli_version bash -c "$E --version | grep -q '^ember $(cat VERSION)'"
t_check cli_help bash -c "$E --help | grep -q record"
t_check cli_record_help bash -c "$E record --help | grep -q -- '--backend auto|kmod|bpf'"
t_check cli_bad_option_exit2 bash -c "$E record --bogus 2>&1 | grep -q 'unknown option'; [ \${PIPESTATUS[0]} -eq 2 ]"
t_check cli_pid_must_exist bash -c "$E record -p 999999999 -o /tmp/ember-unit-\$\$.folded 2>&1 | grep -q 'no such process'; [ \${PIPESTATUS[0]} -eq 2 ]"
t_check cli_unknown_command bash -c "! $E frobnicate 2>/dev/null"
# usage_error NAME ERE COMMAND...: COMMAND is refused as a usage error
# (exit 2) with a message matching ERE on stderr. Bounded by a timeout:
# where the check is missing, a recording or a daemon would start.
usage_error() {
	local name=$1 re=$2 out rc
	shift 2
	out=$(timeout -k 5 10 "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 2 ] && grep -Eq -- "$re" <<<"$out"; then
		t_pass "$name"
	else
		t_fail "$name" "exit $rc: $(head -c 300 <<<"$out" | tr '\n' ' ')"
	fi
}
U=/tmp/ember-unit-$$
usage_error cli_record_dashdash_needs_command "'--' must be followed by a COMMAND" \
	$E record -o $U.folded --
# --cgroup: '..' refused, and a path resolving outside the cgroup v2 root
# (here one under /sys/ that is no cgroup) too, saying what is expected.
usage_error cli_record_cgroup_dotdot "'\.\.' is not allowed; expected a cgroup v2 directory: a path relative to" \
	$E record --cgroup ../../../../etc -d 0.1 -o $U.folded
usage_error cli_record_cgroup_outside_root \
	'/sys/kernel is outside the cgroup v2 root .*; expected a cgroup v2 directory: a path relative to|no cgroup v2 hierarchy is mounted' \
	$E record --cgroup /sys/kernel -d 0.1 -o $U.folded
usage_error cli_record_cgroup_missing \
	"no-such-cgroup-$$: No such file or directory; expected a cgroup v2 directory|no cgroup v2 hierarchy is mounted" \
	$E record --cgroup no-such-cgroup-$$ -d 0.1 -o $U.folded
# ember run: bad values are usage errors when the configuration is read,
# from flags and from the config file alike.
usage_error cli_run_metrics_addr_port_range "invalid metrics_addr ':99999': the port is above 65535" \
	$E run --config /dev/null --metrics-addr :99999
usage_error cli_run_endpoint_v6_unclosed "invalid endpoint 'http://\[::1': no ']' closes the IPv6 address" \
	$E run --config /dev/null -e 'http://[::1'
usage_error cli_run_endpoint_v6_unclosed_long "invalid endpoint 'http://\[::1': no ']' closes the IPv6 address" \
	$E run --config /dev/null --endpoint 'http://[::1'
# One option table (agent/cli/options.c): an option of the other command is
# refused, naming the command that takes it; -e URL in ember run (now
# --event) still works for a release, saying so.
usage_error cli_run_refuses_record_option "-d is an option of ember record only" \
	$E run --config /dev/null -d 5
usage_error cli_record_refuses_run_option "--endpoint is an option of ember run only" \
	$E record --endpoint http://127.0.0.1:1 -o $U.folded
usage_error cli_run_deprecated_e_url_notice "-e URL .* is deprecated .*use --endpoint URL" \
	$E run --config /dev/null -e http://127.0.0.1:1 --bogus
printf 'metrics_addr = [::1]:9464\nendpoint = http://h:4318x\n' >$U.conf
usage_error cli_run_config_file_values_checked \
	"$U.conf:2: invalid endpoint 'http://h:4318x': port '4318x' is not a number from 1 to 65535" \
	$E run --config $U.conf
printf 'metrics_addr = :99999\n' >$U.conf
usage_error cli_run_config_file_metrics_addr "$U.conf:1: invalid metrics_addr ':99999'" \
	$E run --config $U.conf
rm -f $U.conf $U.folded
# A recording that fails before writing removes only a file it created:
# `-o /dev/null` once unlinked /dev/null, and every later ">/dev/null" on
# the machine wrote a regular file. A device node stands in for it here.
failed_output_left_alone() {
	local dir=$U.out gone=4000000
	rm -rf "$dir" && mkdir "$dir" || return 1
	while kill -0 $gone 2>/dev/null; do gone=$((gone + 1)); done
	echo keep >"$dir/old.folded"
	mknod "$dir/null.folded" c 1 3 2>/dev/null || cp -a /dev/null "$dir/null.folded" ||
		{ echo "cannot make a device node"; return 1; }
	for f in null.folded old.folded new.folded; do
		$E record -p $gone -d 0.1 -o "$dir/$f" >/dev/null 2>&1 && {
			echo "-p of a missing process succeeded"; return 1; }
	done
	[ -c "$dir/null.folded" ] || { echo "the device node is gone"; return 1; }
	[ -f "$dir/old.folded" ] || { echo "an existing file was removed"; return 1; }
	[ ! -e "$dir/new.folded" ] || { echo "an empty new file was left"; return 1; }
	rm -rf "$dir"
}
if [ "$(id -u)" = 0 ]; then
	t_check cli_record_failed_keeps_foreign_output failed_output_left_alone
else
	t_skip cli_record_failed_keeps_foreign_output "needs root for a device node"
fi
t_check cli_status_runs bash -c "$E status | grep -q '^ember $(cat VERSION)'"
t_check cli_status_names_backends bash -c "$E status | grep -q '^module backend:' && $E status | grep -q '^eBPF backend:'"
# The man page and the sample config follow the option table: every option
# in either --help is in ember(1), every ember run option is a key in
# packaging/ember.conf.
man=$(sed 's/\\-/-/g' docs/ember.1)
missing=()
for cmd in record run; do
	for o in $($E $cmd --help | sed -n 's/^  \(-[A-Za-z], \)\{0,1\}--\([a-z][a-z-]*\).*/\2/p'); do
		grep -qE -- "--$o([^a-z-]|\$)" <<<"$man" || missing+=("$cmd:--$o")
		[ $cmd = run ] || continue
		case $o in config|help|off-cpu|faults|alloc|resource-attr) continue ;; esac
		grep -q "^#${o//-/_} = " packaging/ember.conf || missing+=("ember.conf:${o//-/_}")
	done
done
if [ ${#missing[@]} -eq 0 ]; then
	t_pass options_documented
else
	t_fail options_documented "not in docs/ember.1 or packaging/ember.conf: ${missing[*]}"
fi
t_check man_page_renders bash -c "MANWIDTH=80 man -l docs/ember.1 2>/dev/null | grep -q 'ember record' || groff -man -Tutf8 docs/ember.1 2>/dev/null | grep -q 'record'"

# ember decode: a gzip bomb (300 MB of zeros in 0.3 MB) is refused at the
# 64 MiB limit with a message, in bounded memory; bad --max-bytes: exit 2
bomb=$(mktemp)
head -c 300000000 /dev/zero | gzip -1 >"$bomb"
res=$(python3 - "$E" "$bomb" <<'PY'
import resource, subprocess, sys
p = subprocess.run([sys.argv[1], "decode", sys.argv[2]], capture_output=True, text=True)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(p.returncode, rss, p.stderr.strip().replace("\n", " "))
PY
)
read -r rc rss msg <<<"$res"
if [ "$rc" = 1 ] && [ "$rss" -lt 150000 ] && [[ $msg == *"--max-bytes raises the limit"* ]]; then
	t_pass decode_gzip_bomb_bounded
else
	t_fail decode_gzip_bomb_bounded "rc=$rc, max RSS ${rss} KiB: $msg"
fi
rm -f "$bomb"
t_check decode_bad_max_bytes_exit2 bash -c "$E decode --max-bytes 0 /dev/null 2>&1 | grep -q 'max-bytes wants'; [ \${PIPESTATUS[0]} -eq 2 ]"
