#!/usr/bin/env bash
# OTLP profiles export: the encoding checked by independent decoders
# (protoc --decode and python3-protobuf with ember's .proto), the exporter
# against a loopback receiver with faults (down, 503/429 + Retry-After,
# slow, 400, partial success, queue overflow, shutdown deadline), and the
# `ember run` daemon end to end. Loopback addresses only; every wait is
# bounded.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

PY=/usr/bin/python3
EMBER=agent/ember
FIXTURE=agent/gen/tests/otlp_fixture
SEND=agent/gen/tests/otlp_send
SEND_OLD=agent/gen/tests/otlp_send_oldcurl	# old-libcurl branches forced
RECV=selftests/otlp/receiver.py
CHECK=selftests/otlp/check_otlp.py
REQ=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
SVC_PROTO=opentelemetry/proto/collector/profiles/v1development/profiles_service.proto

T=$(mktemp -d /tmp/ember-otlp.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

missing=""
for b in "$EMBER" "$FIXTURE" "$SEND"; do [ -x "$b" ] || missing+=" $b"; done
command -v protoc >/dev/null || missing+=" protoc(protobuf-compiler)"
$PY -c 'import google.protobuf' 2>/dev/null || missing+=" python3-protobuf"
if [ -n "$missing" ]; then
	t_skip otlp "missing:$missing (run scripts/install-deps.sh and make)"
	exit 0
fi

# Python bindings from ember's own .proto files: the independent decoder.
mkdir -p "$T/py"
protoc -Iproto --python_out="$T/py" $(find proto/opentelemetry -name '*.proto') ||
	{ t_fail otlp-python-bindings "protoc --python_out failed"; exit 0; }

# --- receiver helpers --------------------------------------------------
# start_receiver NAME [receiver args...]: sets PORT_<NAME>, PID_<NAME>.
start_receiver() {
	local name=$1
	shift
	rm -f "$T/$name.port"
	$PY "$RECV" --port-file "$T/$name.port" --dir "$T/$name" --lifetime 120 "$@" \
		2>"$T/$name.err" &
	local pid=$!
	PIDS+=("$pid")
	for _ in $(seq 100); do
		[ -s "$T/$name.port" ] && break
		sleep 0.05
	done
	printf -v "PID_$name" %s "$pid"
	printf -v "PORT_$name" %s "$(cat "$T/$name.port" 2>/dev/null)"
}
stop_receiver() {
	local pid_var="PID_$1"
	kill "${!pid_var}" 2>/dev/null
	wait "${!pid_var}" 2>/dev/null
}
# A port nothing listens on (a receiver started, then stopped).
dead_port() {
	start_receiver "dead$1"
	stop_receiver "dead$1"
	local v="PORT_dead$1"
	echo "${!v}"
}
nreq() { ls "$T/$1"/*.json 2>/dev/null | wc -l; }
nbin() { ls "$T/$1"/*.bin 2>/dev/null | wc -l; }
stat_of() { sed -n "s/^$1=//p" "$2"; }
# seqs DIR: the test.seq of each accepted body, in arrival order.
seqs() {
	$PY - "$T/py" "$T/$1" <<'EOF'
import glob, sys
sys.path.insert(0, sys.argv[1])
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as s
out = []
for f in sorted(glob.glob(sys.argv[2] + "/*.bin")):
    r = s.ExportProfilesServiceRequest()
    r.ParseFromString(open(f, "rb").read())
    out.append(str(r.resource_profiles[0].resource.attributes[0].value.int_value))
print(" ".join(out))
EOF
}
url() { echo "http://127.0.0.1:$1/v1development/profiles"; }

# --- the schema --------------------------------------------------------
t_check otlp-proto-version-pinned bash -c '
	[ "$(cat proto/opentelemetry/VERSION)" = v1.11.0 ] &&
	grep -q "repeated int32 attribute_indices = 2;" proto/opentelemetry/proto/profiles/v1development/profiles.proto &&
	grep -q "int32 link_index = 3;" proto/opentelemetry/proto/profiles/v1development/profiles.proto &&
	grep -q "repeated int64 values = 4;" proto/opentelemetry/proto/profiles/v1development/profiles.proto &&
	grep -q "repeated Stack stack_table = 7;" proto/opentelemetry/proto/profiles/v1development/profiles.proto'

# --- encoding of a hand-built profile ----------------------------------
CID=9d1c7f0e2b3a4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5
if "$FIXTURE" "$T/fixture.otlp" 2>"$T/fixture.err"; then
	if protoc -Iproto --decode=$REQ $SVC_PROTO <"$T/fixture.otlp" >"$T/fixture.txt" 2>&1 &&
		! grep -qE '^ *[0-9]+:' "$T/fixture.txt" &&
		grep -q 'string_table: ""' "$T/fixture.txt" &&
		grep -q 'key: "process.executable.name"' "$T/fixture.txt"; then
		t_pass otlp-fixture-protoc-decode
	else
		t_fail otlp-fixture-protoc-decode "$(head -c 300 "$T/fixture.txt")"
	fi
	t_check otlp-fixture-semantics $PY $CHECK --pydir "$T/py" "$T/fixture.otlp" \
		--freq 19 --expect-cpu 12 --expect-offcpu 123456789 --expect-processes 2 \
		--expect-container "100=$CID" \
		--expect-container 200=c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00 \
		--expect-stack "do_syscall_64;inline_helper;compute;main" \
		--expect-stack "ksys_read;do_syscall_64;main" --expect-stack worker_loop \
		--need-timestamps
	"$FIXTURE" --user-only "$T/user.otlp" &&
		t_check otlp-fixture-no-unused-entries $PY $CHECK --pydir "$T/py" "$T/user.otlp" \
			--freq 19 --expect-cpu 4 --expect-processes 1 --expect-stack worker_loop
	# The checker must catch what receivers reject.
	$PY - "$T/py" "$T/fixture.otlp" "$T" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as s
src = open(sys.argv[2], "rb").read()
def mutate(name, fn):
    r = s.ExportProfilesServiceRequest(); r.ParseFromString(src); fn(r)
    open("%s/bad-%s.otlp" % (sys.argv[3], name), "wb").write(r.SerializeToString())
mutate("string0", lambda r: r.dictionary.string_table.__setitem__(0, "x"))
mutate("stackidx", lambda r: setattr(r.resource_profiles[0].scope_profiles[0].profiles[0].samples[0], "stack_index", 999))
mutate("link0", lambda r: setattr(r.dictionary.link_table[0], "trace_id", b"\x01" * 16))
mutate("nozero", lambda r: r.dictionary.ClearField("stack_table"))
EOF
	bad_ok=1
	for b in string0 stackidx link0 nozero; do
		if $PY $CHECK --pydir "$T/py" "$T/bad-$b.otlp" >/dev/null 2>&1; then
			bad_ok=0
			t_fail otlp-checker-rejects-broken "accepted bad-$b"
		fi
	done
	[ $bad_ok = 1 ] && t_pass otlp-checker-rejects-broken

	# ember decode: readable, bounds-checked, never crashes.
	out=$("$EMBER" decode "$T/fixture.otlp" 2>&1)
	rc=$?
	if [ $rc = 0 ] && grep -q 'inline_helper app.c:12 (inlined)' <<<"$out" &&
		grep -q 'profile 1: off_cpu/nanoseconds' <<<"$out" &&
		grep -q "container.id=\"$CID\"" <<<"$out" &&
		grep -q 'libc.so.6+0x3a345' <<<"$out"; then
		t_pass otlp-decode-command
	else
		t_fail otlp-decode-command "rc=$rc $(head -c 300 <<<"$out")"
	fi
	head -c 700 "$T/fixture.otlp" >"$T/trunc.otlp"
	head -c 4096 /dev/urandom >"$T/random.otlp"
	dec_ok=1
	for f in trunc random bad-stackidx bad-nozero; do
		"$EMBER" decode "$T/$f.otlp" >/dev/null 2>&1
		rc=$?
		[ $rc = 1 ] || { dec_ok=0; t_fail otlp-decode-rejects-bad-input "$f: exit $rc"; }
	done
	[ $dec_ok = 1 ] && t_pass otlp-decode-rejects-bad-input
else
	t_fail otlp-fixture-encode "$(cat "$T/fixture.err")"
fi

# Invalid UTF-8 from binaries and processes (function names, source file,
# thread names, comm, exe path, build id, host, service name, extra
# attribute): strict proto3 decoders must accept the request, with U+FFFD
# for each invalid byte (lone, truncated, overlong, surrogate, > U+10FFFF).
if "$FIXTURE" --bad-utf8 "$T/bad-utf8.otlp" 2>"$T/bad-utf8.err"; then
	if protoc -Iproto --decode=$REQ $SVC_PROTO <"$T/bad-utf8.otlp" >"$T/bad-utf8.txt" 2>&1 &&
		! grep -qE '^ *[0-9]+:' "$T/bad-utf8.txt" &&
		grep -qF 'string_table: "lone_\357\277\275_byte"' "$T/bad-utf8.txt"; then
		t_pass otlp-bad-utf8-protoc-decode
	else
		t_fail otlp-bad-utf8-protoc-decode "$(head -c 300 "$T/bad-utf8.txt")"
	fi
	if $PY $CHECK --pydir "$T/py" "$T/bad-utf8.otlp" --freq 19 --expect-cpu 6 \
		--expect-processes 2 >"$T/bad-utf8.check" 2>&1 &&
		$PY - "$T/py" "$T/bad-utf8.otlp" >>"$T/bad-utf8.check" 2>&1 <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as s
r = s.ExportProfilesServiceRequest()
r.ParseFromString(open(sys.argv[2], "rb").read())
d = r.dictionary
S = list(d.string_table)
R = "\ufffd"
EXE = "/opt/b" + R + "(ad/app" + R
def stack(si):
    return [S[d.function_table[ln.function_index].name_strindex]
            for li in d.stack_table[si].location_indices
            for ln in d.location_table[li].lines]
want_stack = ["lone_" + R + "_byte", "trunc_" + 2 * R + "_x",
              "overlong_" + 2 * R + "_" + 3 * R, "surrogate_" + 3 * R + "_" + 3 * R,
              "big_" + 4 * R + "_end" + 3 * R, "na\u00efve_\u03bb_\U0001f525"]
stacks = [stack(i) for i in range(len(d.stack_table))]
assert want_stack in stacks, stacks
assert ["dup_" + R] in stacks, stacks
# Names that differ only in invalid bytes share one entry.
assert len(S) == len(set(S)), "duplicate strings: %r" % S
assert S.count("dup_" + R) == 1 and EXE in S and "src/" + R + "x.c" in S, S
assert ("/opt/w" + R + "rk") in S, S
attrs = {}
for kv in d.attribute_table[1:]:
    attrs.setdefault(S[kv.key_strindex], set()).add(kv.value.string_value or kv.value.int_value)
assert attrs["thread.name"] == {"thr" + 2 * R, "w" + 3 * R}, attrs
assert attrs["process.executable.build_id.gnu"] == {"b1d" + R}, attrs
n_thread_names = sum(S[kv.key_strindex] == "thread.name" for kv in d.attribute_table[1:])
assert n_thread_names == 2, "thread.name entries: %d" % n_thread_names
res = {}
for rp in r.resource_profiles:
    a = {kv.key: kv.value.string_value or kv.value.int_value for kv in rp.resource.attributes}
    res[a["process.pid"]] = a
    assert a["host.name"] == "host" + 2 * R, a
    assert a["service.name"] == "svc" + 2 * R, a
    assert a["team" + R] == "perf" + 3 * R, a
assert res[300]["process.executable.path"] == EXE, res
assert res[300]["process.executable.name"] == "app" + R, res
assert res[301]["process.executable.name"] == "co" + R + "mm" + R, res
EOF
	then
		t_pass otlp-bad-utf8-python-decode
	else
		t_fail otlp-bad-utf8-python-decode "$(tail -c 400 "$T/bad-utf8.check")"
	fi
else
	t_fail otlp-bad-utf8-encode "$(cat "$T/bad-utf8.err")"
fi

t_check otlp-container-id-forms bash -c '
	I=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
	f='"$FIXTURE"'
	for p in /docker/$I /system.slice/docker-$I.scope \
		/kubepods/burstable/pod1-2/$I \
		/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice/cri-containerd-$I.scope \
		/kubepods.slice/kubepods-pod1.slice/crio-$I.scope \
		/machine.slice/libpod-$I.scope/container \
		/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-$I.scope; do
		[ "$($f --container "$p")" = "$I" ] || { echo "no id from $p"; exit 1; }
	done
	for p in /machine.slice/libpod-conmon-$I.scope /user.slice/user-0.slice/session-1.scope / \
		/docker/0123; do
		[ -z "$($f --container "$p")" ] || { echo "id from $p"; exit 1; }
	done'

# --- exporter against the loopback receiver ----------------------------
start_receiver ok
"$SEND" --endpoint "$(url "$PORT_ok")" --count 3 --header "X-Scope-OrgID: tenant-1" \
	>"$T/ok.stats" 2>"$T/ok.log"
if [ "$(stat_of exported "$T/ok.stats")" = 3 ] && [ "$(stat_of failed "$T/ok.stats")" = 0 ] &&
	[ "$(nbin ok)" = 3 ] && [ "$(seqs ok)" = "0 1 2" ] &&
	$PY - "$T/ok" <<'EOF'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(f))
    h = r["headers"]
    assert r["path"] == "/v1development/profiles", r["path"]
    assert h.get("content-type") == "application/x-protobuf", h
    assert h.get("content-encoding") == "gzip", h
    assert h.get("x-scope-orgid") == "tenant-1", h
    assert r["decode_error"] is None and r["plain_len"] > 0, r
EOF
then
	t_pass otlp-export-path-headers-gzip
else
	t_fail otlp-export-path-headers-gzip "$(tr '\n' ' ' <"$T/ok.stats") seqs=$(seqs ok)"
fi

start_receiver plain
"$SEND" --endpoint "$(url "$PORT_plain")" --count 1 --no-gzip >"$T/plain.stats" 2>&1
if [ "$(stat_of exported "$T/plain.stats")" = 1 ] && [ "$(seqs plain)" = 0 ] &&
	! grep -q content-encoding "$T/plain"/0000.json; then
	t_pass otlp-export-uncompressed
else
	t_fail otlp-export-uncompressed "$(tr '\n' ' ' <"$T/plain.stats")"
fi
stop_receiver plain

# Receiver down, then back: everything queued arrives, in order, once.
P=$(dead_port 1)
"$SEND" --endpoint "$(url "$P")" --count 3 --interval-ms 100 --retry-initial-ms 100 \
	--retry-max-ms 400 --wait-ms 10000 >"$T/down.stats" 2>"$T/down.log" &
SP=$!
PIDS+=("$SP")
sleep 1.5
start_receiver down --port "$P"
wait $SP
rc=$?
if [ $rc = 0 ] && [ "$(stat_of exported "$T/down.stats")" = 3 ] &&
	[ "$(stat_of failed "$T/down.stats")" = 0 ] &&
	[ "$(stat_of dropped "$T/down.stats")" = 0 ] &&
	[ "$(stat_of retries "$T/down.stats")" -ge 1 ] && [ "$(seqs down)" = "0 1 2" ]; then
	t_pass otlp-receiver-down-then-recovers
else
	t_fail otlp-receiver-down-then-recovers "rc=$rc $(tr '\n' ' ' <"$T/down.stats") seqs=$(seqs down)"
fi
stop_receiver down

# 503 + Retry-After: 1 s is honoured although the backoff asks 50 ms.
start_receiver r503 --mode 503 --retry-after 1 --fail-first 2
"$SEND" --endpoint "$(url "$PORT_r503")" --count 1 --retry-initial-ms 50 \
	--retry-max-ms 100 --wait-ms 8000 >"$T/r503.stats" 2>"$T/r503.log"
gap=$($PY -c '
import glob, json, sys
t = [json.load(open(f))["time"] for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
print(min(b - a for a, b in zip(t, t[1:])) if len(t) > 1 else 0)' "$T/r503")
if [ "$(stat_of exported "$T/r503.stats")" = 1 ] && [ "$(stat_of retries "$T/r503.stats")" = 2 ] &&
	[ "$(stat_of failed "$T/r503.stats")" = 0 ] && [ "$(nreq r503)" = 3 ] &&
	$PY -c "import sys; sys.exit(0 if $gap >= 0.9 else 1)"; then
	t_pass otlp-503-retry-after
else
	t_fail otlp-503-retry-after "gap=$gap $(tr '\n' ' ' <"$T/r503.stats")"
fi
stop_receiver r503

# gaps DIR: seconds between consecutive requests the receiver saw.
gaps() {
	$PY -c '
import glob, json, sys
t = [json.load(open(f))["time"] for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
print(" ".join("%.2f" % (b - a) for a, b in zip(t, t[1:])))' "$T/$1"
}
# in_range "GAPS" LO HI: every gap within [LO, HI] seconds (and one at least).
in_range() {
	$PY -c 'import sys; g = [float(x) for x in sys.argv[1].split()]
sys.exit(0 if g and all(float(sys.argv[2]) <= x <= float(sys.argv[3]) for x in g) else 1)' "$1" "$2" "$3"
}

# A Retry-After longer than the retry budget (2 s > 1000 ms): the wait the
# receiver asked for is honoured and not charged to the budget, so the
# profile arrives after ~2 s instead of being dropped at once.
start_receiver rabig --mode 503 --retry-after 2 --fail-first 1
"$SEND" --endpoint "$(url "$PORT_rabig")" --count 1 --retry-initial-ms 50 \
	--retry-max-ms 100 --max-elapsed-ms 1000 --wait-ms 8000 >"$T/rabig.stats" 2>"$T/rabig.log"
g=$(gaps rabig)
if [ "$(stat_of exported "$T/rabig.stats")" = 1 ] && [ "$(stat_of failed "$T/rabig.stats")" = 0 ] &&
	[ "$(stat_of retries "$T/rabig.stats")" = 1 ] && [ "$(seqs rabig)" = 0 ] &&
	in_range "$g" 1.9 4; then
	t_pass otlp-retry-after-beyond-elapsed-budget
else
	t_fail otlp-retry-after-beyond-elapsed-budget "gaps=[$g] $(tr '\n' ' ' <"$T/rabig.stats") $(tail -n 1 "$T/rabig.log")"
fi
stop_receiver rabig

# Retry-After: 30 with retry_after_max_ms 1000: each wait is cut to 1 s,
# said once in the log, and the profile lands within ~2 s, not 60.
start_receiver raclamp --mode 503 --retry-after 30 --fail-first 2
start=$(date +%s%N)
"$SEND" --endpoint "$(url "$PORT_raclamp")" --count 1 --retry-initial-ms 50 \
	--retry-max-ms 100 --retry-after-max-ms 1000 --wait-ms 8000 \
	>"$T/raclamp.stats" 2>"$T/raclamp.log"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
g=$(gaps raclamp)
if [ "$(stat_of exported "$T/raclamp.stats")" = 1 ] && [ "$(stat_of failed "$T/raclamp.stats")" = 0 ] &&
	[ "$(stat_of retries "$T/raclamp.stats")" = 2 ] && [ "$ms" -lt 5000 ] &&
	in_range "$g" 0.9 2 && [ "$(grep -c 'retry_after_max_ms' "$T/raclamp.log")" = 1 ]; then
	t_pass otlp-retry-after-clamped
else
	t_fail otlp-retry-after-clamped "${ms}ms gaps=[$g] $(tr '\n' ' ' <"$T/raclamp.stats") $(grep -c retry_after_max_ms "$T/raclamp.log") clamp log line(s)"
fi
stop_receiver raclamp

start_receiver r429 --mode 429 --retry-after 1 --fail-first 1
"$SEND" --endpoint "$(url "$PORT_r429")" --count 1 --retry-initial-ms 50 \
	--wait-ms 8000 >"$T/r429.stats" 2>&1
if [ "$(stat_of exported "$T/r429.stats")" = 1 ] && [ "$(stat_of retries "$T/r429.stats")" = 1 ]; then
	t_pass otlp-429-retry
else
	t_fail otlp-429-retry "$(tr '\n' ' ' <"$T/r429.stats")"
fi
stop_receiver r429

# The exporter's branches for libcurl < 7.66/7.85, forced on this libcurl:
# CURLOPT_PROTOCOLS and Retry-After read from the response headers.
start_receiver old --mode 503 --retry-after 1 --fail-first 1
if [ -x "$SEND_OLD" ]; then
	"$SEND_OLD" --endpoint "$(url "$PORT_old")" --count 1 --retry-initial-ms 50 \
		--retry-max-ms 100 --wait-ms 8000 >"$T/old.stats" 2>"$T/old.log"
	gap=$($PY -c '
import glob, json, sys
t = [json.load(open(f))["time"] for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
print(t[1] - t[0] if len(t) > 1 else 0)' "$T/old")
	if [ "$(stat_of exported "$T/old.stats")" = 1 ] && [ "$(stat_of retries "$T/old.stats")" = 1 ] &&
		[ "$(seqs old)" = 0 ] && $PY -c "import sys; sys.exit(0 if $gap >= 0.9 else 1)"; then
		t_pass otlp-old-curl-fallback
	else
		t_fail otlp-old-curl-fallback "gap=$gap $(tr '\n' ' ' <"$T/old.stats")"
	fi
else
	t_fail otlp-old-curl-fallback "$SEND_OLD not built (make $SEND_OLD)"
fi
stop_receiver old

# Slow receiver: within the timeout it is just slow; beyond it the request
# times out, is retried, and lands once the receiver answers in time.
start_receiver slow --mode slow --delay 0.5
"$SEND" --endpoint "$(url "$PORT_slow")" --count 1 --timeout-ms 3000 >"$T/slow1.stats" 2>&1
s1_ok=0
[ "$(stat_of exported "$T/slow1.stats")" = 1 ] && [ "$(stat_of retries "$T/slow1.stats")" = 0 ] && s1_ok=1
stop_receiver slow
start_receiver slow2 --mode slow --delay 2
( sleep 1.2; echo ok >"$T/slow2/mode" ) &
"$SEND" --endpoint "$(url "$PORT_slow2")" --count 1 --timeout-ms 500 --retry-initial-ms 100 \
	--retry-max-ms 200 --wait-ms 8000 >"$T/slow2.stats" 2>"$T/slow2.log"
if [ $s1_ok = 1 ] && [ "$(stat_of exported "$T/slow2.stats")" = 1 ] &&
	[ "$(stat_of retries "$T/slow2.stats")" -ge 1 ] &&
	[ "$(stat_of failed "$T/slow2.stats")" = 0 ]; then
	t_pass otlp-slow-receiver
else
	t_fail otlp-slow-receiver "fast:$(tr '\n' ' ' <"$T/slow1.stats") slow:$(tr '\n' ' ' <"$T/slow2.stats")"
fi
stop_receiver slow2

# 400: dropped at once with a log line, never retried.
start_receiver r400 --mode 400
"$SEND" --endpoint "$(url "$PORT_r400")" --count 3 --retry-initial-ms 50 \
	>"$T/r400.stats" 2>"$T/r400.log"
if [ "$(stat_of failed "$T/r400.stats")" = 3 ] && [ "$(stat_of exported "$T/r400.stats")" = 0 ] &&
	[ "$(stat_of retries "$T/r400.stats")" = 0 ] && [ "$(nreq r400)" = 3 ] &&
	grep -q 'answered 400: profile dropped' "$T/r400.log"; then
	t_pass otlp-400-dropped
else
	t_fail otlp-400-dropped "$(tr '\n' ' ' <"$T/r400.stats") reqs=$(nreq r400)"
fi
stop_receiver r400

start_receiver partial --mode partial
"$SEND" --endpoint "$(url "$PORT_partial")" --count 1 >"$T/partial.stats" 2>"$T/partial.log"
if [ "$(stat_of exported "$T/partial.stats")" = 1 ] &&
	[ "$(stat_of partial_rejected "$T/partial.stats")" = 1 ] &&
	grep -q 'partial success: receiver rejected 1 profile' "$T/partial.log"; then
	t_pass otlp-partial-success-logged
else
	t_fail otlp-partial-success-logged "$(tr '\n' ' ' <"$T/partial.stats")"
fi
stop_receiver partial

# Queue of 2 while the receiver is away: #0 is in flight, #1 and #2 are
# dropped for #3 and #4; after recovery exactly 0, 3, 4 arrive.
P=$(dead_port 2)
"$SEND" --endpoint "$(url "$P")" --count 5 --interval-ms 200 --queue 2 \
	--retry-initial-ms 100 --retry-max-ms 300 --wait-ms 10000 >"$T/q.stats" 2>"$T/q.log" &
SP=$!
PIDS+=("$SP")
sleep 1.6
start_receiver q --port "$P"
wait $SP
if [ "$(stat_of dropped "$T/q.stats")" = 2 ] && [ "$(stat_of exported "$T/q.stats")" = 3 ] &&
	[ "$(stat_of failed "$T/q.stats")" = 0 ] && [ "$(seqs q)" = "0 3 4" ]; then
	t_pass otlp-queue-drop-oldest
else
	t_fail otlp-queue-drop-oldest "$(tr '\n' ' ' <"$T/q.stats") seqs=$(seqs q)"
fi
stop_receiver q

# The byte cap bounds everything held, the profile in flight and its gzip
# copy included: 30 profiles of item_len bytes against a stalled receiver
# (one request hangs) under a 20000-byte cap. Exactly
# floor((cap - in_flight_bytes) / item_len) wait, the rest are dropped for
# the byte cap (64 slots never bind), and queued bytes never exceed the cap.
start_receiver stall --mode slow --delay 30
"$SEND" --endpoint "$(url "$PORT_stall")" --count 30 --interval-ms 20 --pad 2000 \
	--queue 64 --queue-max-bytes 20000 --timeout-ms 20000 --wait-ms 300 \
	--shutdown-ms 500 >"$T/cap.stats" 2>"$T/cap.log"
if $PY - "$T/cap.stats" >"$T/cap.check" 2>&1 <<'EOF'
import sys
st = dict(l.strip().split("=", 1) for l in open(sys.argv[1]) if "=" in l)
g = lambda k: int(st[k])
cap, n, L, fl = 20000, 30, g("item_len"), g("in_flight_bytes")
waiting = (cap - fl) // L
problems = [what for what, ok in [
    ("one in flight", g("in_flight") == 1 and g("exported") == 0 and g("failed") == 0),
    ("gzip copy counted", fl > L),
    ("waiting = floor((cap - in flight) / item_len)", g("queue_depth") == waiting),
    ("dropped = n - 1 - waiting", g("dropped") == n - 1 - waiting),
    ("all drops for the byte cap", g("dropped_bytes") == g("dropped")),
    ("queue_bytes = waiting * item_len + in flight",
     g("queue_bytes") == g("queue_depth") * L + fl),
    ("queue_bytes_peak <= cap", g("queue_bytes") <= g("queue_bytes_peak") <= cap),
    ("no room for one more", g("queue_bytes") + L > cap)] if not ok]
if problems:
    sys.exit("not so: " + "; ".join(problems))
EOF
then
	t_pass otlp-queue-byte-cap-counts-in-flight
else
	t_fail otlp-queue-byte-cap-counts-in-flight "$(tail -n 1 "$T/cap.check") $(tr '\n' ' ' <"$T/cap.stats")"
fi
stop_receiver stall

# Shutdown with the receiver down: bounded by the deadline, counted.
P=$(dead_port 3)
start=$(date +%s%N)
OTLP_SEND_AFTER_SHUTDOWN=1 "$SEND" --endpoint "$(url "$P")" --count 2 --wait-ms 0 \
	--shutdown-ms 700 --retry-initial-ms 100 >"$T/sd.stats" 2>"$T/sd.log"
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ $rc = 0 ] && [ "$(stat_of failed "$T/sd.stats")" = 2 ] && [ "$ms" -lt 3000 ]; then
	t_pass otlp-shutdown-deadline
else
	t_fail otlp-shutdown-deadline "rc=$rc ${ms}ms $(tr '\n' ' ' <"$T/sd.stats")"
fi

# TLS: https with a custom CA works; without that CA nothing is sent.
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$T/key.pem" -out "$T/cert.pem" \
	>/dev/null 2>&1; then
	start_receiver tls --tls-cert "$T/cert.pem" --tls-key "$T/key.pem"
	"$SEND" --endpoint "https://127.0.0.1:$PORT_tls/v1development/profiles" --count 1 \
		--ca "$T/cert.pem" >"$T/tls.stats" 2>"$T/tls.log"
	"$SEND" --endpoint "https://127.0.0.1:$PORT_tls/v1development/profiles" --count 1 \
		--retry-initial-ms 50 --max-elapsed-ms 300 --wait-ms 3000 \
		>"$T/tls-noca.stats" 2>"$T/tls-noca.log"
	if [ "$(stat_of exported "$T/tls.stats")" = 1 ] && [ "$(seqs tls)" = 0 ] &&
		[ "$(stat_of exported "$T/tls-noca.stats")" = 0 ] &&
		[ "$(stat_of failed "$T/tls-noca.stats")" = 1 ] && [ "$(nbin tls)" = 1 ]; then
		t_pass otlp-export-https-custom-ca
	else
		t_fail otlp-export-https-custom-ca "ca:$(tr '\n' ' ' <"$T/tls.stats") noca:$(tr '\n' ' ' <"$T/tls-noca.stats") $(head -c 200 "$T/tls.log")"
	fi
	stop_receiver tls
else
	t_skip otlp-export-https-custom-ca "openssl cannot make a test certificate"
fi

# --- the daemon -----------------------------------------------------------
# run_daemon NAME SECONDS ARGS...: ember run for SECONDS under a busy loop,
# then SIGTERM; stderr in $T/NAME.run.
run_daemon() {
	local name=$1 secs=$2
	shift 2
	timeout 30 sh -c 'while :; do :; done' &
	local busy=$!
	PIDS+=("$busy")
	"$EMBER" run "$@" 2>"$T/$name.run" &
	local ep=$!
	PIDS+=("$ep")
	# Count SECONDS from when sampling runs (its start-up line), not from
	# launch: start-up time varies, and counting from launch could stop
	# the daemon milliseconds into an interval, leaving a last partial
	# interval too short to hold an on-CPU sample. Bounded: 10 s.
	for _ in $(seq 100); do
		grep -q "exporting every" "$T/$name.run" 2>/dev/null && break
		kill -0 "$ep" 2>/dev/null || break
		sleep 0.1
	done
	sleep "$secs"
	kill -TERM "$ep" 2>/dev/null
	# Bounded: the shutdown deadline is 5 s by default.
	for _ in $(seq 100); do kill -0 "$ep" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$ep" 2>/dev/null; then
		kill -KILL "$ep"
		echo "still running 10 s after SIGTERM" >>"$T/$name.run"
	fi
	wait "$ep"
	RUN_RC=$?
	kill "$busy" 2>/dev/null
}
run_field() { sed -n "s/.*stopped: \([0-9]*\) intervals, profiles exported \([0-9]*\), failed \([0-9]*\), dropped \([0-9]*\).*/\\$2/p" "$T/$1.run"; }
# Intervals in which nothing ran are counted, not sent (no empty requests).
run_empty() { sed -n 's/.*, empty intervals \([0-9]*\).*/\1/p' "$T/$1.run"; }

if [ "$(id -u)" != 0 ]; then
	t_skip otlp-run "ember run needs root (BPF or the module)"
	exit 0
fi

# End to end, configured through the environment.
start_receiver run
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$PORT_run" OTEL_SERVICE_NAME=checkout \
OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci,team=perf%20eng" \
OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20t0ken" \
	run_daemon run 4.5 --interval 1 -F 99 -e cpu,offcpu --metrics-addr 127.0.0.1:0 --config /dev/null
if grep -q "backend" "$T/run.run" && [ "$RUN_RC" = 0 ]; then
	n=$(nbin run)
	exported=$(run_field run 2)
	ok=1
	[ "$n" -ge 3 ] && [ "$exported" = "$n" ] && [ "$(run_field run 3)" = 0 ] || ok=0
	for f in "$T"/run/*.bin; do
		$PY $CHECK --pydir "$T/py" "$f" --freq 99 --min-cpu 1 --need-timestamps \
			--expect-service checkout --expect-attr deployment.environment=ci \
			--expect-attr "team=perf eng" >"$T/run.check" 2>&1 || { ok=0; break; }
	done
	grep -q '"authorization": "Bearer t0ken"' "$T"/run/0000.json || ok=0
	# Off-CPU time is its own profile: some sleeping task shows up.
	$PY $CHECK --pydir "$T/py" "$T/run/0001.bin" --min-offcpu 1 >>"$T/run.check" 2>&1 || ok=0
	if [ $ok = 1 ]; then
		t_pass otlp-run-exports-every-interval
	else
		t_fail otlp-run-exports-every-interval "bins=$n exported=$exported $(head -c 300 "$T/run.check") $(tail -n 2 "$T/run.run" | tr '\n' ' ')"
	fi
else
	t_skip otlp-run "ember run could not start: $(head -n 3 "$T/run.run" | tr '\n' ' ')"
	exit 0
fi
stop_receiver run

# Receiver down for the first seconds: sampling goes on, queued intervals
# arrive after recovery, nothing is lost or duplicated.
P=$(dead_port 4)
( sleep 2.5; exec $PY "$RECV" --port-file "$T/rec.port" --dir "$T/rec" --port "$P" \
	--lifetime 60 ) &
PIDS+=("$!")
run_daemon rec 6 --endpoint "http://127.0.0.1:$P" --interval 1 --retry-initial-ms 200 \
	--retry-max-ms 500 --config /dev/null
intervals=$(run_field rec 1)
exported=$(run_field rec 2)
if [ "$RUN_RC" = 0 ] && [ "${intervals:-0}" -ge 5 ] && [ "$exported" = "$(nbin rec)" ] &&
	[ "$exported" = "$((intervals - $(run_empty rec)))" ] && [ "$(run_field rec 3)" = 0 ] &&
	[ "$(run_field rec 4)" = 0 ] && grep -q "will retry\|failed" "$T/rec.run"; then
	t_pass otlp-run-receiver-down-recovers
else
	t_fail otlp-run-receiver-down-recovers "rc=$RUN_RC intervals=$intervals empty=$(run_empty rec) exported=$exported bins=$(nbin rec) $(tail -n 1 "$T/rec.run")"
fi

# 999 Hz with both CPUs busy, one profile every 2 s: at every interval
# edge the profile is built and encoded while the rings fill; none of
# their records may be lost (the backend's own counters), and every
# interval reaches the receiver.
start_receiver edge
timeout 30 sh -c 'while :; do :; done' &
edge_busy=$!
PIDS+=("$edge_busy")
run_daemon edge 10 --endpoint "http://127.0.0.1:$PORT_edge" --interval 2 -F 999 \
	--config /dev/null
kill "$edge_busy" 2>/dev/null
intervals=$(run_field edge 1)
lost=$(sed -n 's/.*, records lost \([0-9]*\).*/\1/p' "$T/edge.run")
if [ "$RUN_RC" = 0 ] && [ "${intervals:-0}" -ge 5 ] && [ "${lost:-x}" = 0 ] &&
	[ "$(run_field edge 2)" = "$(nbin edge)" ] && [ "$(run_field edge 3)" = 0 ]; then
	t_pass otlp-run-999hz-no-loss-at-interval-edges
else
	t_fail otlp-run-999hz-no-loss-at-interval-edges "rc=$RUN_RC intervals=$intervals lost=$lost exported=$(run_field edge 2) bins=$(nbin edge) $(tail -n 1 "$T/edge.run")"
fi
stop_receiver edge

# Metrics endpoint while running; config file; SIGHUP switches receivers.
start_receiver a
start_receiver b
echo "endpoint = http://127.0.0.1:$PORT_a
interval = 1
metrics_addr = 127.0.0.1:0" >"$T/ember.conf"
# Something to sample, as in run_daemon: idle CPUs give no on-CPU samples,
# so on a quiet machine no interval would have a profile to export.
timeout 30 sh -c 'while :; do :; done' &
hup_busy=$!
PIDS+=("$hup_busy")
"$EMBER" run --config "$T/ember.conf" 2>"$T/hup.run" &
EP=$!
PIDS+=("$EP")
mport=""
for _ in $(seq 50); do
	mport=$(sed -n 's/.*metrics at .*(port \([0-9]*\)).*/\1/p' "$T/hup.run")
	[ -n "$mport" ] && break
	sleep 0.1
done
sleep 2.2
metrics=$(curl -s --max-time 3 "http://127.0.0.1:$mport/metrics")
sed -i "s/$PORT_a/$PORT_b/" "$T/ember.conf"
kill -HUP $EP
sleep 2.2
kill -TERM $EP
wait $EP
hup_rc=$?
kill "$hup_busy" 2>/dev/null
if [ $hup_rc = 0 ] && [ "$(nbin a)" -ge 1 ] && [ "$(nbin b)" -ge 1 ] &&
	grep -q "configuration reloaded" "$T/hup.run"; then
	t_pass otlp-run-config-file-sighup
else
	t_fail otlp-run-config-file-sighup "rc=$hup_rc a=$(nbin a) b=$(nbin b) $(tail -n 2 "$T/hup.run" | tr '\n' ' ')"
fi
if grep -qE '^ember_profiles_exported_total [1-9]' <<<"$metrics" &&
	grep -qE '^ember_samples_total\{event="cpu"\} [1-9]' <<<"$metrics" &&
	grep -qE '^ember_resident_memory_bytes [1-9]' <<<"$metrics" &&
	grep -q '^ember_export_queue_depth 0' <<<"$metrics"; then
	t_pass otlp-run-metrics-endpoint
else
	t_fail otlp-run-metrics-endpoint "port=$mport $(head -c 300 <<<"$metrics")"
fi
# The bytes the exporter holds and its drops by the bound reached.
if grep -qE '^ember_export_queue_bytes [0-9]+$' <<<"$metrics" &&
	grep -q '^ember_export_dropped_total{reason="slots"} 0$' <<<"$metrics" &&
	grep -q '^ember_export_dropped_total{reason="bytes"} 0$' <<<"$metrics"; then
	t_pass otlp-run-metrics-queue-bytes
else
	t_fail otlp-run-metrics-queue-bytes "$(grep -E 'queue|dropped' <<<"$metrics" | tr '\n' ' ')"
fi
# The process table's counters: the busy loop was sampled, so it is kept;
# nothing was refused on a table far from its cap.
if grep -qE '^ember_proc_table_processes [1-9]' <<<"$metrics" &&
	grep -qE '^ember_proc_table_created_total [1-9]' <<<"$metrics" &&
	grep -qE '^ember_proc_table_bytes [1-9]' <<<"$metrics" &&
	grep -qE '^ember_proc_table_(exited|reused_total|released_total) [0-9]+$' <<<"$metrics" &&
	grep -q '^ember_proc_table_evicted_total 0$' <<<"$metrics" &&
	grep -q '^ember_proc_table_refused_total 0$' <<<"$metrics"; then
	t_pass otlp-run-metrics-proc-table
else
	t_fail otlp-run-metrics-proc-table "$(grep proc_table <<<"$metrics" | tr '\n' ' ')"
fi
# Every sample line is NAME[{LABELS}] VALUE, its NAME declared by a TYPE.
bad=$(awk '/^# TYPE /{t[$3]=1; next} /^#/{next}
	{n=$1; sub(/\{.*/, "", n)
	 if (NF != 2 || n !~ /^[a-z_][a-z0-9_]*$/ || $2 !~ /^[0-9.e+-]+$/ || !t[n]) print}' <<<"$metrics")
if [ -n "$metrics" ] && [ -z "$bad" ]; then
	t_pass otlp-run-metrics-format
else
	t_fail otlp-run-metrics-format "$(head -c 300 <<<"$bad")"
fi

# --alloc: a process started with the allocation sampler preloaded is
# profiled by bytes, exported as alloc_space and inuse_space profiles.
# --alloc is deprecated (-e cpu,alloc) and still works for a release,
# saying so; the new spelling is the off-CPU run's -e above.
if make -s alloc-work >"$T/alloc-build.log" 2>&1; then
	start_receiver alloc
	LD_PRELOAD=$PWD/preload/libember-alloc.so EMBER_ALLOC_RATE=4096 \
		agent/gen/tests/semwatch 12 >"$T/alloc.sem" &
	aw=$!
	PIDS+=("$aw")
	run_daemon alloc 3.5 --endpoint "http://127.0.0.1:$PORT_alloc" --interval 1 \
		--alloc --config /dev/null
	kill "$aw" 2>/dev/null
	types=$(for f in "$T"/alloc/*.bin; do "$EMBER" decode "$f" 2>/dev/null; done |
		sed -n 's/^  profile [0-9]*: \([a-z_]*\/bytes\).*/\1/p' | sort -u | tr '\n' ' ')
	frames=$(for f in "$T"/alloc/*.bin; do "$EMBER" decode "$f" 2>/dev/null; done |
		grep -c ' main .*semwatch')
	if [ "$RUN_RC" = 0 ] && grep -q "+ allocations" "$T/alloc.run" &&
		grep -q -- "--alloc is deprecated .*use -e cpu,alloc" "$T/alloc.run" &&
		[ "$types" = "alloc_space/bytes inuse_space/bytes " ] && [ "$frames" -gt 0 ]; then
		t_pass otlp-run-alloc-profiles
	else
		t_fail otlp-run-alloc-profiles "rc=$RUN_RC types '$types', $frames samples under semwatch's main: $(tail -n 2 "$T/alloc.run" | tr '\n' ' ')"
	fi
	stop_receiver alloc
else
	t_fail otlp-run-alloc-profiles "make alloc-work: $(tail -n 2 "$T/alloc-build.log" | tr '\n' ' ')"
fi

# Bad configuration: a clear message and exit status 2, nothing started.
"$EMBER" run --config /dev/null --endpoint ftp://x >"$T/bad1.out" 2>&1
rc1=$?
echo "frobnicate = 1" >"$T/bad.conf"
"$EMBER" run --config "$T/bad.conf" >"$T/bad2.out" 2>&1
rc2=$?
if [ $rc1 = 2 ] && [ $rc2 = 2 ] && grep -q "unknown setting 'frobnicate'" "$T/bad2.out"; then
	t_pass otlp-run-bad-config
else
	t_fail otlp-run-bad-config "rc=$rc1/$rc2 $(cat "$T/bad1.out" "$T/bad2.out" | tr '\n' ' ')"
fi

# SIGTERM with the receiver gone: exits within the shutdown deadline.
P=$(dead_port 5)
start=$(date +%s%N)
run_daemon term 1.5 --endpoint "http://127.0.0.1:$P" --interval 1 --shutdown-timeout 1 \
	--config /dev/null
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$RUN_RC" = 0 ] && [ "$ms" -lt 6000 ] && [ "$(run_field term 2)" = 0 ] &&
	[ "$(run_field term 3)" -ge 1 ]; then
	t_pass otlp-run-sigterm-deadline
else
	t_fail otlp-run-sigterm-deadline "rc=$RUN_RC ${ms}ms $(tail -n 1 "$T/term.run")"
fi
exit 0
