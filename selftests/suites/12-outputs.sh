#!/usr/bin/env bash
# 12-outputs: the agent's SVG flame graph and pprof writers
# (agent/output/output_svg.c, agent/output/output_pprof.c) on hand-built
# profiles (selftests/agent/output/fixtures.c), checked by independent readers:
#   - the writers built with ASan/UBSan and -Werror, full-disk errors;
#   - SVG: strict XML parse and a Python reimplementation of the flame graph
#     rules (check_svg.py); headless Chromium loads each SVG without script
#     errors, drives search/zoom through the URL-fragment test hook, and
#     screenshots one to selftests/artifacts/flamegraph.png (check_png.py);
#   - pprof: `protoc --decode` against proto/pprof/profile.proto and the
#     pprof-format npm package (check_pprof.js), installed into .cache/node.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

src=selftests/agent/output
work=.cache/output-tests
out=$work/out
artifacts=selftests/artifacts
rm -rf "$work"
mkdir -p "$out" "$artifacts"
fixtures=(basic mixed offcpu nasty fuzz empty large)

# ---- build -----------------------------------------------------------------
build() {
	make -s agent/gen/flamegraph_assets.c agent/gen/pprof/profile.pb-c.c &&
		gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE \
			-fsanitize=address,undefined -fno-sanitize-recover=all \
			-Iagent -Iinclude -Iagent/gen \
			agent/output/output_svg.c agent/output/output_pprof.c agent/lib/hash_index.c \
			agent/gen/flamegraph_assets.c agent/gen/pprof/profile.pb-c.c \
			"$src/fixtures.c" -lprotobuf-c -lz -o "$work/fixtures"
}
if ! out_build=$(build 2>&1); then
	t_fail "outputs: writers build -Werror with ASan/UBSan" \
		"$(printf '%s' "$out_build" | tail -n 3 | tr '\n' ' ')"
	exit 0
fi
t_pass "outputs: writers build -Werror with ASan/UBSan"

# ---- write every fixture (the program prints its own PASS/FAIL lines) ------
"$work/fixtures" "$out" >"$work/fixtures.log" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP): |^# ' "$work/fixtures.log"
if [ $rc -ne 0 ] && ! grep -q '^FAIL: ' "$work/fixtures.log"; then
	t_fail "outputs: fixture writer ran cleanly" \
		"exit $rc: $(grep -m3 -E 'ERROR|runtime error' "$work/fixtures.log" | tr '\n' ' ')"
fi

# ---- SVG content ------------------------------------------------------------
if command -v python3 >/dev/null; then
	python3 "$src/check_svg.py" "$out" "${fixtures[@]}"
else
	t_skip "svg: content checks" "python3 missing (scripts/install-deps.sh)"
fi

# ---- pprof: protoc ----------------------------------------------------------
if command -v protoc >/dev/null; then
	for f in "${fixtures[@]}"; do
		name="pprof $f: protoc --decode perftools.profiles.Profile"
		if ! gzip -dc "$out/$f.pb.gz" | protoc --decode perftools.profiles.Profile \
			-Iproto proto/pprof/profile.proto >"$work/$f.txt" 2>"$work/$f.err"; then
			t_fail "$name" "$(head -c 300 "$work/$f.err")"
			continue
		fi
		want=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["samples"]))' \
			"$out/$f.expected.json")
		got=$(grep -c '^sample {' "$work/$f.txt")
		first=$(grep -m1 '^string_table: ' "$work/$f.txt")
		if [ "$got" = "$want" ] && [ "$first" = 'string_table: ""' ]; then
			t_pass "$name ($got samples)"
		else
			t_fail "$name" "$got samples (want $want), first string: $first"
		fi
	done
else
	t_skip "pprof: protoc decode" "protoc missing (protobuf-compiler)"
fi

# ---- pprof: pprof-format (npm) ----------------------------------------------
node_dir=.cache/node
if command -v node >/dev/null && command -v npm >/dev/null; then
	if [ ! -f "$node_dir/node_modules/pprof-format/package.json" ]; then
		mkdir -p "$node_dir"
		npm install --prefix "$node_dir" --no-audit --no-fund --no-save --silent \
			pprof-format@2 >"$work/npm.log" 2>&1 ||
			echo "# npm install failed: $(tail -n 2 "$work/npm.log" | tr '\n' ' ')"
	fi
	if [ -f "$node_dir/node_modules/pprof-format/package.json" ]; then
		NODE_PATH=$node_dir/node_modules node "$src/check_pprof.js" "$out" "${fixtures[@]}"
	else
		t_skip "pprof: pprof-format read-back" "npm install pprof-format failed"
	fi
else
	t_skip "pprof: pprof-format read-back" "node/npm missing"
fi

# ---- -e lock: folded, SVG, pprof and OTLP of lock waits ----------------------
# selftests/agent/test_lock_output.c builds the profile from synthetic
# EMBER_REC_LOCK/_WAKER records, checks it in C and leaves the files here
# for readers outside C: protoc, pprof-format, go tool pprof, ember decode.
lockdir=$work/lock
mkdir -p "$lockdir"
if make -s -j2 agent/gen/tests/test_lock_output agent/ember >"$work/lock-build.log" 2>&1; then
	agent/gen/tests/test_lock_output "$lockdir" >"$work/lock.log" 2>&1
	sed 's/^\(PASS\|FAIL\): /\1: lock outputs: /' "$work/lock.log" | grep -E '^(PASS|FAIL): '
	if command -v protoc >/dev/null && gzip -dc "$lockdir/lock.pb.gz" |
		protoc --decode perftools.profiles.Profile -Iproto proto/pprof/profile.proto \
		>"$work/lock.txt" 2>&1; then
		if grep -q '^string_table: "contentions"$' "$work/lock.txt" &&
			grep -q '^string_table: "delay"$' "$work/lock.txt" &&
			grep -q '^string_table: "\[lock 0x7f0000001000 futex\]"$' "$work/lock.txt"; then
			t_pass "lock outputs: pprof decodes with protoc (contentions, delay, [lock ...])"
		else
			t_fail "lock outputs: pprof decodes with protoc" "strings missing"
		fi
	elif command -v protoc >/dev/null; then
		t_fail "lock outputs: pprof decodes with protoc" "$(head -c 300 "$work/lock.txt")"
	fi
	dec=$(agent/ember decode "$lockdir/lock.otlp" 2>&1)
	if grep -q 'profile [0-9]*: contentions/count, period 1 contentions/count' <<<"$dec" &&
		grep -q 'profile [0-9]*: delay/nanoseconds.*total 7107000 (0.007107 s)' <<<"$dec" &&
		grep -q 'ember.lock.address=0x7f0000001000 ember.lock.kind="futex"' <<<"$dec" &&
		grep -q '\[waker unlocker\]' <<<"$dec"; then
		t_pass "lock outputs: ember decode prints the lock profiles readably"
	else
		t_fail "lock outputs: ember decode prints the lock profiles readably" \
			"$(head -c 400 <<<"$dec" | tr '\n' ' ')"
	fi
	if [ -f "$node_dir/node_modules/pprof-format/package.json" ]; then
		if NODE_PATH=$node_dir/node_modules node -e '
			const { Profile } = require("pprof-format");
			const zlib = require("zlib"), fs = require("fs");
			const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[1])));
			const s = (i) => p.stringTable.strings[Number(i)];
			const t = p.sampleType.map((v) => s(v.type) + "/" + s(v.unit)).join(",");
			if (t !== "contentions/count,delay/nanoseconds") throw new Error(t);
			const d = p.sample.reduce((a, x) => a + Number(x.value[1]), 0);
			if (d !== 7107000) throw new Error("delay " + d);' "$lockdir/lock.pb.gz" \
			>"$work/lock-node.log" 2>&1; then
			t_pass "lock outputs: pprof-format reads contentions/count, delay/nanoseconds"
		else
			t_fail "lock outputs: pprof-format read-back" "$(tail -n 2 "$work/lock-node.log" | tr '\n' ' ')"
		fi
	fi
	if command -v go >/dev/null; then
		if go tool pprof -sample_index=delay -traces "$lockdir/lock.pb.gz" \
			>"$work/lock-go.txt" 2>&1 && grep -q 'waker unlocker' "$work/lock-go.txt"; then
			t_pass "lock outputs: go tool pprof reads the delay profile"
		else
			t_fail "lock outputs: go tool pprof" "$(tail -n 2 "$work/lock-go.txt" | tr '\n' ' ')"
		fi
	else
		t_skip "lock outputs: go tool pprof" "go not installed"
	fi
else
	t_fail "lock outputs: build" "$(grep -m3 -E 'error|Error' "$work/lock-build.log" | tr '\n' ' ')"
fi

# ---- SVG in headless Chromium -----------------------------------------------
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	t_skip "svg: opens in headless Chromium" "chromium missing (scripts/install-deps.sh)"
	exit 0
fi

# chrome ARGS...: a throw-away profile each time, no network activity of its own.
chrome() {
	local ud
	ud=$(mktemp -d "$work/chrome.XXXXXX")
	timeout 90 "$browser" --headless --no-sandbox --disable-gpu \
		--disable-background-networking --disable-component-update --disable-sync --disable-quic \
		--no-first-run --user-data-dir="$ud" --enable-logging=stderr --v=0 "$@"
	local rc=$?
	rm -rf "$ud"
	return $rc
}

# attr DOMFILE NAME: value of a data- attribute of the root <svg>.
attr() {
	head -c 4096 "$1" | grep -m1 -o "<svg [^>]*>" | grep -o " $2=\"[^\"]*\"" |
		sed 's/^[^"]*"//; s/"$//'
}

# load ID FILE FRAGMENT: dump the DOM to $work/ID.dom after the script ran and
# report "svg ID: loads in Chromium...": the script must run to its end with
# no error, in the DOM and in the console.
load() {
	local id=$1 file=$2 frag=$3 dom=$work/$1.dom err=$work/$1.stderr
	local name="svg $id: loads in Chromium, script runs without error" e
	chrome --dump-dom "file://$PWD/$file$frag" >"$dom" 2>"$err"
	e=$(attr "$dom" data-ember-error)
	if [ -n "$e" ]; then
		t_fail "$name" "script error: $e"
		return 1
	fi
	if grep -q 'INFO:CONSOLE.*\(Uncaught\|Error\)' "$err"; then
		t_fail "$name" "console: $(grep -m1 'INFO:CONSOLE' "$err")"
		return 1
	fi
	if [ "$(attr "$dom" data-ember-ready)" != 1 ]; then
		t_fail "$name" "script did not finish (not an SVG document, or blocked): $(head -c 200 "$dom")"
		return 1
	fi
	t_pass "$name"
}

# expect NAME DOMNAME ATTR=VALUE...: compare attributes of a loaded DOM.
expect() {
	local name=$1 dom=$work/$2.dom bad=""
	shift 2
	for kv in "$@"; do
		local got
		got=$(attr "$dom" "${kv%%=*}")
		[ "$got" = "${kv#*=}" ] || bad+=" ${kv%%=*}=$got (want ${kv#*=})"
	done
	if [ -z "$bad" ]; then
		t_pass "$name"
	else
		t_fail "$name" "$bad"
	fi
}

for f in mixed offcpu empty large fuzz; do
	load "$f" "$out/$f.svg" ""
done

# The harness itself must see a script error: break a copy on purpose.
sed 's/var details = byId("details");/&undefinedFunction();/' "$out/basic.svg" >"$work/broken.svg"
chrome --dump-dom "file://$PWD/$work/broken.svg" >"$work/broken.dom" 2>"$work/broken.stderr"
if [ -n "$(attr "$work/broken.dom" data-ember-error)" ] &&
	grep -q 'INFO:CONSOLE.*Uncaught' "$work/broken.stderr"; then
	t_pass "svg: the Chromium harness detects a script error"
else
	t_fail "svg: the Chromium harness detects a script error" "a broken script went unnoticed"
fi

# A user's own #fragment must not break the graph (nor log an error).
chrome --dump-dom "file://$PWD/$out/mixed.svg#top" >"$work/frag.dom" 2>"$work/frag.stderr"
if [ "$(attr "$work/frag.dom" data-ember-ready)" = 1 ] &&
	! grep -q 'INFO:CONSOLE.*Uncaught' "$work/frag.stderr"; then
	t_pass "svg: an unknown URL fragment is ignored quietly"
else
	t_fail "svg: an unknown URL fragment is ignored quietly" \
		"$(grep -m1 'INFO:CONSOLE' "$work/frag.stderr")"
fi

# Search and zoom, through the #fragment test hook (flamegraph.js header):
# one page load runs several steps and snapshots the state after each.
# basic: app 99 samples (main 85: compute 70 = hot_loop 50 + vec_add 20,
# read_input 15 -> do_syscall_64), db 1 (-> do_syscall_64); 22 boxes.
steps="search=comp&snap=s1&search=do_syscall_64%24&snap=s2&search=main%7Ccompute&snap=s3"
steps+="&ic&search=HOT_LOOP&snap=s4&noic&search=&zoom=main&snap=z1&reset&snap=z2"
if load basic "$out/basic.svg" "#$steps"; then
	d=basic
	expect "svg: search substring 'comp' matches 70%" "$d" data-s1-matched=70.00
	expect "svg: search regex 'do_syscall_64\$' matches 16% (two processes)" "$d" \
		data-s2-matched=16.00
	expect "svg: nested matches count once ('main|compute' = 86%)" "$d" data-s3-matched=86.00
	expect "svg: ignore-case search ('HOT_LOOP' = 50%)" "$d" data-s4-matched=50.00
	expect "svg: zoom on 'main' fills the width, shows its subtree and ancestors" "$d" \
		data-z1-zoom-width=1180.00 data-z1-visible=11 data-z1-matched=
	expect "svg: reset zoom shows every box again" "$d" data-z2-visible=22 data-z2-zoom-width=
fi
# nasty: "operator<<(std" is no valid regex; a 500-frame stack (60 of 100).
steps="search=operator%3C%3C(std&snap=s1&search=&zoom=depth_250&snap=z1"
if load nasty "$out/nasty.svg" "#$steps"; then
	d=nasty
	expect "svg: invalid regex searches as a substring" "$d" data-s1-matched=40.00
	expect "svg: zoom at depth 250 of a 500-frame stack" "$d" \
		data-z1-zoom-width=1180.00 data-z1-visible=502
fi

# Screenshot: the artefact a human looks at, and a pixel check that it is one.
height=$(grep -m1 -o '<svg [^>]*>' "$out/basic.svg" | grep -o ' height="[0-9]*"' | tr -dc 0-9)
rm -f "$artifacts/flamegraph.png"
chrome --screenshot="$PWD/$artifacts/flamegraph.png" --window-size="1200,${height:-300}" \
	--hide-scrollbars "file://$PWD/$out/basic.svg" >"$work/shot.log" 2>&1
cp "$out/basic.svg" "$artifacts/flamegraph.svg"
if [ -s "$artifacts/flamegraph.png" ]; then
	python3 "$src/check_png.py" "$artifacts/flamegraph.png"
else
	t_fail "screenshot shows a flame graph" "chromium wrote no $artifacts/flamegraph.png"
fi
exit 0
