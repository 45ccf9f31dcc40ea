# Sourced by check-alloc.sh, check-alloc-pid.sh and check-alloc-cgroup.sh
# (POSIX sh, for the guests' busybox; copied next to them): their options,
# one parser, and what they check alike. The caller sets its defaults and
# ME first; an option the caller does not use is accepted and ignored.
#
#   --ember PATH  --work PATH  --backend kmod|bpf  --label L  --rate BYTES
#   --warmup S  --scale S  --out DIR  --lib PATH (the sampler library)
#   --compare BACKEND  --allocator REGEX (the file named as probed)
#   --preload LIB (the workload runs with LD_PRELOAD=LIB)
#   --served NAME (the allocator that must serve the workload's blocks,
#                  by allocwork's SERVED line: jemalloc, tcmalloc, glibc)
alloc_args() {
	while [ $# -gt 0 ]; do
		if [ $# -lt 2 ]; then
			echo "$ME: $1 needs a value" >&2
			exit 2
		fi
		case $1 in
		--ember) E=$2 ;;
		--work) W=$2 ;;
		--backend) B=$2 ;;
		--label) L=$2 ;;
		--rate) RATE=$2 ;;
		--warmup) WARMUP=$2 ;;
		--scale) SCALE=$2 ;;
		--out) OUT=$2 ;;
		--lib) LIB=$2 ;;
		--compare) CMP=$2 ;;
		--allocator) ALLOCATOR=$2 ;;
		--preload) PRELOAD=$2 ;;
		--served) SERVED=$2 ;;
		*) echo "$ME: unknown argument $1" >&2; exit 2 ;;
		esac
		shift 2
	done
}

# Whether the executable mappings of file $2 in process $1 read as the
# file does: "same", "differ" (breakpoints in them), or "unreadable" /
# "none" (a broken check, never a pass)
text_vs_file() {
	awk -v f="$2" '$2 ~ /x/ && $6 == f { print $1, $3 }' "/proc/$1/maps" |
	while read -r range off; do
		lo=$((0x${range%-*})) hi=$((0x${range#*-})) off=$((0x$off))
		a=$(dd if="/proc/$1/mem" bs=4096 skip=$((lo / 4096)) \
			count=$(((hi - lo) / 4096)) 2>/dev/null | md5sum)
		b=$(dd if="$2" bs=4096 skip=$((off / 4096)) \
			count=$(((hi - lo) / 4096)) 2>/dev/null | md5sum)
		if [ -z "$a" ] || [ -z "$b" ]; then
			echo unreadable
		elif [ "$a" = "$b" ]; then
			echo same
		else
			echo differ
		fi
	done | sort -u | tr '\n' ' ' | awk '{
		# one verdict for all: differ if any does, "none" if none read
		v = "none"
		for (i = 1; i <= NF; i++)
			if ($i == "differ" || ($i == "unreadable" && v != "differ") ||
			    ($i == "same" && v == "none"))
				v = $i
		print v
	}'
}

# Bytes allocated per chain, allocwork's accounting (the CHAIN lines of
# TRUTH, summed over the processes whose output it holds) against the
# profile FOLDED: "chain=truth%/profile% ... total=T/P worst=W"
alloc_shares() {
	awk '
	FNR == NR && /^CHAIN / { t[$2] += $3; ts += $3; next }
	FNR != NR && index($0, ";[alloc];") {
		for (c in t) if (index($0, ";" c ";")) { g[c] += $NF; gs += $NF }
	}
	END {
		w = 0
		for (c in t) {
			d = 100 * t[c] / ts - (gs ? 100 * g[c] / gs : 0)
			if (d < 0) d = -d
			if (d > w) w = d
			printf "%s=%.1f%%/%.1f%% ", c, 100 * t[c] / ts, gs ? 100 * g[c] / gs : 0
		}
		printf "total=%.0f/%.0f worst=%.2f\n", ts, gs, w
	}' "$1" "$2" 2>/dev/null
}

# alloc_shares' verdict: every share within 3 points, the total within 10%
shares_ok() {
	awk -v s="$1" 'BEGIN {
		split(s, f, "worst="); n = split(s, g, "total="); split(g[2], tt, "[/ ]")
		exit !(n == 2 && tt[1] > 0 && f[2] + 0 <= 3 &&
		       tt[2] >= 0.9 * tt[1] && tt[2] <= 1.1 * tt[1])
	}'
}

# Bytes per chain of KIND (alloc: allocated, the CHAIN lines' third
# field; inuse: still in use at the end, the fourth), allocwork's truth
# TRUTH against the profile FOLDED: "chain=truth%/profile% ... bytes=B
# worst=W", B the profile's bytes of the chains
kind_shares() {
	awk -v kind="$1" '
	FNR == NR && /^CHAIN / {
		t[$2] += kind == "alloc" ? $3 : $4; tsum += kind == "alloc" ? $3 : $4
		next
	}
	FNR != NR && index($0, ";[" kind "];") {
		for (c in t)
			if (index($0, ";" c ";")) { g[c] += $NF; gsum += $NF; break }
	}
	END {
		worst = 0
		for (c in t) {
			tp = tsum ? 100 * t[c] / tsum : 0
			gp = gsum ? 100 * g[c] / gsum : 0
			d = tp > gp ? tp - gp : gp - tp
			if (d > worst) worst = d
			printf "%s=%.1f%%/%.1f%% ", c, tp, gp
		}
		printf "bytes=%d worst=%.2f\n", gsum, worst
	}' "$2" "$3"
}

# Whether kind_shares' output $1 has its worst share within $2 points
within() { awk -v w="${1##*worst=}" -v lim="$2" 'BEGIN { exit !(w <= lim) }'; }

# kind_shares inuse' verdict on TRUTH and FOLDED: every chain's share of
# the bytes in use within 5 points; prints the shares
inuse_ok() {
	u=$(kind_shares inuse "$1" "$2")
	echo "$u"
	case $u in *"bytes=0 "*) return 1 ;; esac
	within "$u" 5
}
