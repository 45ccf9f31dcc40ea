#!/usr/bin/env bash
# Suite 11's Go part (issue 24, item 6), sourced by 11-symbolize.sh with
# selftests/lib.sh: sym_go compares a stripped Go build with the
# unstripped one (symbolize/sym_gopclntab.c), then `ember record -b bpf`
# profiles the -s -w -trimpath build and the unstripped one: the stripped
# run names >= 95% of its Go frames, and the functions that take >= 1% of
# either run are named in both.
go_suite() {
	local G=agent/gen/sym-tests/go out rc tmp
	if ! command -v go >/dev/null; then
		t_skip sym_go "go not installed (scripts/install-deps.sh installs golang-go)"
		return 0
	fi
	if ! out=$(make -s -j2 sym-go 2>&1); then
		t_fail sym_go_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
		return 0
	fi
	t_pass sym_go_build
	timeout 120 "$G/sym_go" "$G"
	rc=$?
	[ $rc -le 1 ] || t_fail sym_go_exit "sym_go ended with status $rc (crash or timeout)"

	if [ "$(id -u)" -ne 0 ]; then
		t_skip sym_go_record "needs root for the eBPF backend"
		return 0
	fi
	if ! out=$(make -s -j2 agent 2>&1); then
		t_fail sym_go_record_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
		return 0
	fi
	if ! agent/ember status 2>/dev/null | grep -q '^ember record will use: eBPF'; then
		t_skip sym_go_record "the eBPF backend cannot run here"
		return 0
	fi
	tmp=$(mktemp -d /tmp/ember-go.XXXXXX)
	for v in gowork-stripped gowork; do
		# --stack-copy 0: both runs walked alike (frame pointers), so the
		# names are what differs. With copies, every Go sample is copied
		# (no .eh_frame: no CFI step) and libdwfl's replay over the
		# unstripped binary's .debug_frame restores the callers of
		# frameless leaves (main.workerHash above main.hashLoop), which
		# the stripped one has no CFI for.
		if ! timeout 60 agent/ember record -b bpf -F 499 --stack-copy 0 -o "$tmp/$v.folded" \
			-- "$G/$v" 3 >"$tmp/$v.out" 2>"$tmp/$v.err"; then
			t_fail sym_go_record "ember record of $v failed: $(tail -n 2 "$tmp/$v.err" | tr '\n' ' ')"
			rm -rf "$tmp"
			return 0
		fi
	done
	# user frames: after the command name, not kernel frames nor [cut];
	# unnamed ones read "FILE+0xOFFSET"
	go_frames() {
		awk '{ n = $NF; $NF = ""; sub(/ $/, "");
		       k = split($0, f, ";");
		       for (i = 2; i <= k; i++) {
			       if (f[i] ~ /_\[k\]$/ || f[i] == "[cut]") continue;
			       print n, f[i]
		       } }' "$1"
	}
	local named total share
	read -r named total < <(go_frames "$tmp/gowork-stripped.folded" |
		awk '{ t += $1; if ($2 !~ /\+0x[0-9a-f]+$/) n += $1 } END { print n + 0, t + 0 }')
	share=$(awk -v n="$named" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * n / t : 0 }')
	echo "# go record: stripped run names $named of $total Go frames ($share%)"
	if awk -v s="$share" -v t="$total" 'BEGIN { exit !(t >= 500 && s >= 95) }'; then
		t_pass sym_go_record_stripped_named
	else
		t_fail sym_go_record_stripped_named "$named of $total frames named ($share%)"
	fi
	# functions with >= 1% of a run's samples, in both runs
	hot() {
		local s
		s=$(awk '{ t += $NF } END { print t + 0 }' "$1")
		go_frames "$1" | awk -v s="$s" '{ c[$2] += $1 } END {
			for (f in c) if (c[f] * 100 >= s) { sub(/\.abi0$/, "", f); print f } }' |
			sort -u
	}
	local a b
	a=$(hot "$tmp/gowork-stripped.folded" | tr '\n' ' ')
	b=$(hot "$tmp/gowork.folded" | tr '\n' ' ')
	echo "# go record: hot functions stripped: $a"
	echo "# go record: hot functions unstripped: $b"
	if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q 'main.hashLoop;main.mix ' "$tmp/gowork-stripped.folded" &&
		grep -q ';runtime.goexit;' "$tmp/gowork-stripped.folded"; then
		t_pass sym_go_record_same_functions
	else
		t_fail sym_go_record_same_functions "stripped: $a / unstripped: $b (inlined main.mix, root runtime.goexit expected)"
	fi
	rm -rf "$tmp"
}
