#!/usr/bin/env bash
# Real Debian binaries, built without frame pointers: the share of samples
# whose user stack reaches the outer function every sample of the program
# runs under, for ember and, in the same run, for perf --call-graph dwarf.
#
#   check-real.sh --ember BIN [--backend B] [--out DIR] [--no-perf]
#                 [--xz-mb N]    (input of the xz run, default 8 MB)
#                 [--only "python3.11 xz openssl openssl_nosha"]  (default: all)
#                 [--py-secs S] [--py-warmup S]  (python's work, default 4 s;
#                  a sleep before it, default 0: the agent's table build
#                  for python3.11 takes a while under emulation)
#                 [--outer FRAME] [--min PCT]  (check FRAME instead of each
#                  program's work function; "complete": the share of
#                  samples without [cut], i.e. proven whole, from the first
#                  sample of a -- CMD run, set-up and loader included;
#                  PCT: the pass mark, default 95)
#                 [--py-attach]  (profile the running python with -p, 1 s
#                  into its warm-up, as a service is: under emulation its
#                  own start-up, before the agent has built its tables,
#                  would otherwise be most of what is measured)
#   check-real.sh --python-files
#
# PASS when ember reaches it in at least 95% of the program's samples.
# --python-files prints the host files python3.11 reads to run the check's
# script (interpreter, stdlib modules with their .pyc, lib-dynload
# extensions), and xz and openssl, and exits: a VM needs exactly those (40-agent-vm.sh passes
# them to run-vm.sh --host-file).
set -uo pipefail
EMBER= BACKEND=auto OUT=${TMPDIR:-/tmp}/ember-real PERF=1 FREQ=499 XZ_MB=8
FILES=0 ONLY="python3.11 xz openssl openssl_nosha" PY_SECS=4 PY_WARMUP=0
PY_ATTACH=0 OUTER= MIN=95
while [ $# -gt 0 ]; do
	case $1 in
	--python-files) FILES=1 ;;
	--ember) EMBER=$2; shift ;;
	--backend) BACKEND=$2; shift ;;
	--out) OUT=$2; shift ;;
	--no-perf) PERF=0 ;;
	--xz-mb) XZ_MB=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--py-secs) PY_SECS=$2; shift ;;
	--py-warmup) PY_WARMUP=$2; shift ;;
	--py-attach) PY_ATTACH=1 ;;
	--outer) OUTER=$2; shift ;;
	--min) MIN=$2; shift ;;
	*) echo "check-real.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

# ember's figure: samples of comm whose stack holds the frame, in percent
ember_share() {	# folded comm frame
	awk -v c="$2" -v f="$3" '
	{ n = $NF; sub(/ [0-9]+$/, ""); if (index($0, c ";") != 1) next
	  t += n
	  if (f == "complete" ? !index($0, ";[cut];") : index(";" $0 ";", ";" f ";"))
		k += n }
	END { if (t) printf "%.1f %d\n", 100 * k / t, t; else print "0 0" }' "$1"
}

# perf's figure from `perf script` of a --call-graph dwarf recording
perf_share() {	# perf.data comm frame
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk -v c="$2" -v f="$3" '
	/^[^ \t]/ { if (in_s) { t++; k += hit }; in_s = ($1 == c); hit = 0; next }
	/^[ \t]/ { if (in_s && $2 == f) hit = 1 }
	END { if (in_s) { t++; k += hit }; if (t) printf "%.1f %d\n", 100 * k / t, t; else print "0 0" }'
}

check() {	# name comm frame command...
	local name=$1 comm=$2 frame=${OUTER:-$3}
	shift 3
	local folded=$OUT/$name.folded target=(-- "$@") pid=""
	if [ -n "${ATTACH_FOR:-}" ]; then	# -p on the running program
		# it runs until killed: ember's own start (seconds under TCG,
		# more with a bigger BPF object) must not eat its lifetime
		"$@" >/dev/null 2>&1 &
		pid=$!
		sleep 1
		target=(-p "$pid" -d "$ATTACH_FOR")
	fi
	"$EMBER" record --backend "$BACKEND" -F "$FREQ" -o "$folded" \
		"${target[@]}" >/dev/null 2>"$OUT/$name.err"
	local rc=$?
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid"; }
	if [ $rc -ne 0 ]; then
		echo "FAIL: unwind_real_$name: ember record failed: $(tail -n 2 "$OUT/$name.err" | tr '\n' ' ')"
		return
	fi
	read -r pct n <<<"$(ember_share "$folded" "$comm" "$frame")"
	local ref=""
	# perf's reference runs the command: not for a program run until killed
	if [ "$PERF" = 1 ] && [ -z "$pid" ] && command -v perf >/dev/null; then
		if perf record -q --call-graph dwarf -F "$FREQ" -o "$OUT/$name.perf" -- "$@" \
			>/dev/null 2>&1; then
			read -r ppct pn <<<"$(perf_share "$OUT/$name.perf" "$comm" "$frame")"
			ref=", perf --call-graph dwarf ${ppct}% of $pn"
		fi
		rm -f "$OUT/$name.perf"
	fi
	echo "# unwind_real_$name: ember reaches $frame in ${pct}% of $n samples$ref"
	if [ "$n" -ge 100 ] && awk -v p="$pct" -v m="$MIN" 'BEGIN { exit !(p >= m) }'; then
		echo "PASS: unwind_real_$name${OUTER:+_outer}"
	else
		echo "FAIL: unwind_real_$name${OUTER:+_outer}: $frame in ${pct}% of $n samples (want >= $MIN%)$ref"
	fi
}

py=/usr/bin/python3.11
# the script: a sleep of argv[2] seconds, then json, re and sha256 (in
# libcrypto, whose perlasm CFA is *(rsp + N) + 8 without SHA-NI) for
# argv[1] seconds; with EMBER_PY_FILES set, then the files of every module it
# loaded, one a line
py_script() {
	cat >"$1" <<'EOF'
import hashlib, json, os, re, sys, time
time.sleep(float(sys.argv[2]))
end = time.time() + float(sys.argv[1])
doc = {"k%d" % i: [i, str(i) * 3, {"x": i / 3}] for i in range(300)}
pat = re.compile(r"(\d+)\1")
blob = b"ember" * 13107
n = 0
while time.time() < end:
    s = json.dumps(doc)
    d = json.loads(s)
    n += sum(1 for m in pat.finditer(s))
    n += hashlib.sha256(blob).digest()[0]
if not os.environ.get("EMBER_PY_FILES"):
    print(n)
    sys.exit(0)
print(os.__file__)  # the interpreter's landmark for its prefix
for m in list(sys.modules.values()):
    for f in (getattr(m, "__file__", None), getattr(m, "__cached__", None)):
        if f and f.startswith(os.path.dirname(os.__file__) + "/") and \
           os.path.exists(f):
            print(f)
EOF
}

if [ "$FILES" = 1 ]; then
	# xz and openssl too (a VM runs them as -- CMD); their libraries come
	# with them (run-vm.sh copies a file's closure)
	for b in /usr/bin/xz /usr/bin/openssl; do
		[ -x "$b" ] && echo "$b"
	done
	[ -x "$py" ] || exit 0
	tmp=$(mktemp -d) || exit 1
	py_script "$tmp/work.py"
	echo "$py"
	(cd / && EMBER_PY_FILES=1 "$py" -E "$tmp/work.py" 0 0) | sort -u
	rc=${PIPESTATUS[0]}
	rm -rf "$tmp"
	exit "$rc"
fi
mkdir -p "$OUT"
want() { [[ " $ONLY " == *" $1 "* ]]; }

if ! want python3.11; then
	:
elif [ -x "$py" ]; then
	py_script "$OUT/work.py"
	py_secs=$PY_SECS
	if [ "$PY_ATTACH" = 1 ]; then
		ATTACH_FOR=$((PY_WARMUP + PY_SECS))
		py_secs=3600	# killed once ember is done
	fi
	check python3.11 python3.11 Py_BytesMain "$py" "$OUT/work.py" "$py_secs" "$PY_WARMUP"
	ATTACH_FOR=
else
	echo "SKIP: unwind_real_python3.11: $py not installed"
fi
if ! want xz; then
	:
elif command -v xz >/dev/null && command -v base64 >/dev/null; then
	head -c $((XZ_MB * 1000000)) /dev/urandom | base64 >"$OUT/xz.in"
	check xz xz lzma_code xz -6 -k -f -T1 "$OUT/xz.in"
	rm -f "$OUT/xz.in" "$OUT/xz.in.xz"
else
	echo "SKIP: unwind_real_xz: xz not installed"
fi
if ! want openssl; then
	:
elif command -v openssl >/dev/null; then
	check openssl openssl EVP_Digest openssl speed -seconds 3 -bytes 1024 -evp sha256
else
	echo "SKIP: unwind_real_openssl: openssl not installed"
fi
# The same on a CPU without the SHA extensions (most Intel servers before
# Ice Lake, qemu's default CPU): OpenSSL's AVX2/SSSE3 sha256 finds its
# caller's frame through CFA = *(rsp + N) + 8, a CFI expression
if ! want openssl_nosha; then
	:
elif command -v openssl >/dev/null; then
	check openssl_nosha openssl EVP_Digest env OPENSSL_ia32cap=:~0x20000000 \
		openssl speed -seconds 3 -bytes 1024 -evp sha256
else
	echo "SKIP: unwind_real_openssl_nosha: openssl not installed"
fi
