# Python frames (EMBER_CMD_PY_BIND, issue 24); sourced by guest.sh, same
# helpers. Debian 12's python3.11 runs pywork.py; ember-test binds it with
# a struct ember_py_proc of its own (ember-test.c, "Python frames") and,
# with -T, the CFI tables of python3.11 and libc made on the host
# (30-kmod-vm.sh puts them in /payload/pyt), so the module's CFI walk
# reaches _PyEval_EvalFrameDefault in code built without frame pointers.

PY=/usr/bin/python3.11
PYT=/payload/pyt
PYW=$HERE/pywork.py

# starts pywork.py MODE ARGS... into $W/pyw.out, waits for "ready"
py_start() {
	rm -f $W/pyw.out
	spawn $PY -S "$PYW" "$@" $W/pyw.out
	PYPID=$LAST
	i=0
	while ! grep -q '^ready' $W/pyw.out 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ]; then
			return 1
		fi
		sleep 0.1
	done
}

# the chains of ember-test's output $1 for pid $2, checked against the
# code objects in $W/pyw.out. One line: key=value figures.
#   main_py: main-thread samples with Python frames; main_ok: exactly
#   c,b,a,module leaf first, in a row, with a native frame after them
#   (unless $3 is 0);
#   nap_py / nap_ok: the thread's off-CPU records, nap2,nap1; bad: a code
#   address that is no code of the script; cut: samples with pycut
#   (not 5/6, which cut no chain: rest and shift count them);
#   noflag: Python frames without EMBER_SF_PYTHON (0x1000)
py_chains() {
	awk -v pid="$2" -v need_after="$3" '
	FNR == NR { if ($1 == "code") name[$3] = $2; next }
	function bit(s, b,   i, v) {	# bit b of hex s (busybox awk)
		v = 0; s = tolower(s); sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return int(v / b) % 2
	}
	function val(k,   i) {
		for (i = 1; i <= NF; i++)
			if (index($i, k "=") == 1)
				return substr($i, length(k) + 2)
		return ""
	}
	($1 == "sample" || $1 == "offcpu") && val("pid") == pid {
		n = split(val("u"), f, ",")
		seq = ""; np = 0; after = 0; cut = 0; gap = 0; last = 0
		for (i = 1; i <= n; i++) {
			if (f[i] ~ /^py:/) {
				split(f[i], p, ":")
				nm = (p[2] in name) ? name[p[2]] : "?"
				if (nm == "?") bad++
				if (np && last != i - 1) gap = 1
				seq = seq (np ? "," : "") nm; np++; last = i
			} else if (f[i] == "pycut:5" || f[i] == "pycut:6") {
				# no Python cut (uapi): a cut of the native walk
				# with the activations left after it (5: the
				# frame pointers missed the eval loop), or the
				# empty activation of the leaf, its PC after it (6)
				moved[substr(f[i], 7)]++
			} else if (f[i] ~ /^pycut:/) {
				cut = 1
				split(f[i], p, ":"); kinds = kinds " " $1 ":" p[2]
			} else if (np) {
				after = 1
			}
		}
		if (cut) cuts++
		if (!np) next
		if (!bit(val("flags"), 4096)) noflag++
		main = val("tid") == pid
		if ($1 == "sample" && main) {
			mpy++
			if (seq == "c,b,a,module" && !gap && (after || !need_after)) mok++
			else if (nbad++ < 3) ex = ex " [" seq " gap=" gap " after=" after "]"
		}
		if ($1 == "offcpu" && !main) {
			npy++
			if (seq == "nap2,nap1" && !gap && (after || !need_after)) nok++
			else if (nbad++ < 3) ex = ex " [off:" seq "]"
		}
	}
	END {
		printf "main_py=%d main_ok=%d nap_py=%d nap_ok=%d bad=%d cut=%d noflag=%d rest=%d shift=%d%s%s\n",
			mpy, mok, npy, nok, bad, cuts, noflag, moved[5], moved[6],
			ex ? " e.g." ex : "",
			kinds ? " cuts (record:why):" substr(kinds, 1, 120) : ""
	}' $W/pyw.out "$1"
}

py_kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# every PY_PROC field refused when wrong, with a message; the cap
t_py_badreq() {
	if $ET pybad >$W/pybad 2>&1; then
		pass "py-badreq: $(grep -c '^py ok' $W/pybad) checks ($(grep -m1 'version 3.10' $W/pybad | cut -c1-80); $(grep -m1 -E 'ENOSPC|py-cap-not-run' $W/pybad | cut -c1-90))"
	else
		fail py-badreq "$(grep -E 'PY-FAIL|ember-test' $W/pybad | head -n 4 | tr '\n' ' ')"
	fi
}

# a -> b -> c on CPU and nap1 -> nap2 -> time.sleep off CPU, in their
# true place in the native stack; $1: "cfi" (tables) or "fp" (none)
t_py_chain() {
	mode=$1
	topt=""
	[ "$mode" = cfi ] && topt="-T $PYT"
	if ! py_start chain 30; then
		fail "py-chain-$mode" "pywork.py did not start: $(cat $W/pyw.out 2>&1 | head -c 200)"
		reap
		return
	fi
	# 499 Hz: the FP walk reaches the eval loop in 15-50% of samples
	# only (Debian's python3.11 keeps no frame pointers), and at 99 Hz
	# that left ~30 to judge the 2% of cuts by (1 cut = 3%)
	$ET run -e 3 -f 499 -d 6 -y $PYPID $topt -p $PYPID >$W/pyrun-$mode 2>&1
	reap
	if ! grep -q '^py-bind .*ret=0' $W/pyrun-$mode; then
		fail "py-chain-$mode" "bind: $(grep -E 'py-|ember-test' $W/pyrun-$mode | head -n 3 | tr '\n' ' ')"
		return
	fi
	# by frame pointers (Debian builds python3.11 without them) the walk
	# ends at the eval loop's frame: no native frame after it is required
	after=1
	[ "$mode" = fp ] && after=0
	r=$(py_chains $W/pyrun-$mode $PYPID $after)
	mpy=$(py_kv "$r" main_py)
	mok=$(py_kv "$r" main_ok)
	npy=$(py_kv "$r" nap_py)
	nok=$(py_kv "$r" nap_ok)
	why=""
	[ "$mpy" -ge 20 ] || why="$why only $mpy main-thread samples with Python frames;"
	[ $((mok * 100)) -ge $((mpy * 95)) ] || why="$why main chains wrong;"
	[ "$(py_kv "$r" bad)" = 0 ] || why="$why unknown code addresses;"
	[ "$(py_kv "$r" noflag)" = 0 ] || why="$why EMBER_SF_PYTHON missing;"
	# a frame page not resident at that instant (the process faulting it
	# in: an off-CPU record in D state) is unreadable without faulting:
	# cut, correctly; more than 2% in a clean run is not that
	cut=$(py_kv "$r" cut)
	[ $((cut * 50)) -le $((mpy + npy)) ] || why="$why $cut cuts in a clean run;"
	if [ "$mode" = cfi ]; then
		[ "$npy" -ge 5 ] || why="$why only $npy off-CPU records with Python frames;"
		[ $((nok * 100)) -ge $((npy * 95)) ] || why="$why off-CPU chains wrong;"
	fi
	samples=$(grep -c "^sample .*pid=$PYPID " $W/pyrun-$mode)
	if [ -z "$why" ]; then
		pass "py-chain-$mode: $r (of $samples samples of the process)"
	else
		fail "py-chain-$mode" "$why $r (of $samples samples)"
	fi
}

# frames rewritten while walked: no kernel warning, cut markers, no code
# address that is neither the script's nor one of the garbage values
t_py_scribble() {
	if ! py_start scribble; then
		fail py-scribble "pywork.py did not start"
		reap
		return
	fi
	objs=$(awk '$1 == "frame" { printf "%s ", $3 }' $W/pyw.out)
	$ET run -e 3 -f 499 -d 5 -y $PYPID -T $PYT -p $PYPID >$W/pyscr 2>&1 &
	rp=$!
	sleep 1
	# shellcheck disable=SC2086 # one argument per frame object
	$ET pyscribble $PYPID 3 $objs >$W/pyscr-w 2>&1
	wait $rp
	alive=0
	kill -0 $PYPID 2>/dev/null && alive=1
	reap
	# allowed: the script's code objects and every value written (frame
	# addresses, garbage), whole or torn (a read racing a write: the low
	# bytes of one such value, the high bytes of another); anything else
	# would be a frame from nowhere
	garbage=$(awk '/^pyscribble frame/ { printf "%s ", $5 }
		/^pyscribble wrote/ { printf "%s ", $3 }' $W/pyscr-w | tr ' ' '\n' |
		sort -u | tr '\n' ' ')
	res=$(awk -v g="$garbage" -v pid=$PYPID '
	function hex16(s) { s = tolower(s); sub(/^0x/, "", s)
		while (length(s) < 16) s = "0" s
		return s }
	function allow(s,   j, h) { h = hex16(s)
		for (j = 1; j < 8; j++) {
			lo[j, substr(h, 17 - 2 * j)] = 1
			hi[j, substr(h, 1, 16 - 2 * j)] = 1
		} }
	function mixed(s,   j, h) { h = hex16(s)
		for (j = 1; j < 8; j++)
			if (((j, substr(h, 17 - 2 * j)) in lo) &&
			    ((j, substr(h, 1, 16 - 2 * j)) in hi))
				return 1
		return 0 }
	FNR == NR { if ($1 == "code") { ok[$3] = 1; allow($3) }; next }
	BEGIN { n = split(g, gs, " ")
		for (i = 1; i <= n; i++) { ok[gs[i]] = 2; allow(gs[i]) } }
	function bit(s, b,   i, v) {	# bit b of hex s (busybox awk)
		v = 0; s = tolower(s); sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return int(v / b) % 2
	}
	function val(k,   i) {
		for (i = 1; i <= NF; i++)
			if (index($i, k "=") == 1)
				return substr($i, length(k) + 2)
		return ""
	}
	$1 == "sample" && val("pid") == pid {
		n = split(val("u"), f, ","); c = 0; p = 0
		for (i = 1; i <= n; i++) {
			if (f[i] ~ /^py:/) { split(f[i], q, ":"); p++
				if (!(q[2] in ok)) {
					if (mixed(q[2])) torn++
					else if (bad++ < 3) badv = badv " " q[2]
				} }
			if (f[i] ~ /^pycut:/) { c = 1; split(f[i], q, ":"); why[q[2]]++ }
		}
		if (p) withpy++
		if (c) { cuts++; if (!bit(val("flags"), 128)) noflag++ }
	}
	END { printf "withpy=%d cuts=%d bad=%d torn=%d noflag=%d why=1:%d,2:%d,3:%d,4:%d%s\n",
		withpy, cuts, bad, torn, noflag, why[1], why[2], why[3], why[4],
		badv ? " bad:" badv : "" }' $W/pyw.out $W/pyscr)
	warn=$(dmesg | grep -cE 'WARNING|BUG:|Oops|general protection')
	w=$(grep '^pyscribble writes' $W/pyscr-w)
	if [ "$(py_kv "$res" bad)" = 0 ] && [ "$(py_kv "$res" noflag)" = 0 ] &&
	   [ "$(py_kv "$res" cuts)" -gt 0 ] && [ "$warn" = 0 ] && [ -n "$w" ]; then
		pass "py-scribble: $w; $res; process alive=$alive; no kernel warning"
	else
		fail py-scribble "$res; $w warnings=$warn $(grep -E 'ember-test|py-bind' $W/pyscr | head -n 2 | tr '\n' ' ')"
	fi
}

# rmmod while a bound Python process is sampled, then reload
t_py_unload() {
	if ! py_start chain 30; then
		fail py-unload "pywork.py did not start"
		reap
		return
	fi
	spawn sh -c "exec $ET hold 6 -e 3 -f 1000 -y $PYPID -T $PYT >$W/pyhold 2>&1"
	sleep 2
	if ! rmmod ember 2>$W/pyrm; then
		fail py-unload "rmmod during sampling: $(cat $W/pyrm)"
		reap
		return
	fi
	reap
	if ! load; then
		fail py-unload "reload failed"
		return
	fi
	warn=$(dmesg | grep -cE 'WARNING|BUG:|Oops|general protection')
	if grep -q '^py-bind .*ret=0' $W/pyhold && [ "$warn" = 0 ]; then
		pass "py-unload: unloaded mid-session with a bound Python process sampled at 1000 Hz, reloaded, no kernel warning"
	else
		fail py-unload "$(head -n 3 $W/pyhold | tr '\n' ' ') warnings=$warn"
	fi
}

if [ -x $PY ] && [ -f "$PYW" ]; then
	want py-badreq && t_py_badreq
	want py-chain && t_py_chain cfi
	want py-chain && t_py_chain fp
	want py-scribble && t_py_scribble
	want py-unload && t_py_unload
else
	for t in py-badreq py-chain py-scribble py-unload; do
		want $t && skip $t "no $PY in the guest (30-kmod-vm.sh passes it)"
	done
fi
