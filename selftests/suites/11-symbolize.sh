#!/usr/bin/env bash
# Symbolizer: builds the test binaries (agent/mk/sym-tests.mk) and runs
# selftests/agent/sym/sym_test, which resolves addresses of real processes
# (most after they exited): PIE, non-PIE, -O2 inline frames, no -g,
# stripped, .gnu_debuglink and build-id debug files, a shared library with
# p_vaddr != p_offset, deleted files, JIT perf maps, C++/Rust demangling,
# the vdso, kallsyms, truncated and fuzzed ELF input, cache sharing and its
# memory bound. Then sym_hostile: targets run as nobody whose debug link or
# mapped library is a FIFO, a symlink (to /dev/zero, to a root-only file), a
# 4 GB sparse file, another user's file or "../../etc/shadow", symbolized as
# root within a time bound and a peak-RSS bound, with one warning naming
# the file (issue 14). Then times a cold and warm symbolization of 5000
# addresses. Then Go binaries without symbol tables, named from
# .gopclntab (selftests/agent/sym/go_e2e.sh; needs go).
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

T=agent/gen/sym-tests
if ! out=$(make -s -j2 sym-tests 2>&1); then
	t_fail sym_tests_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
t_pass sym_tests_build

# Every test prints its own PASS:/FAIL: line; a crash shows as a FAIL here.
timeout 300 "$T/sym_test" "$T"
rc=$?
if [ $rc -gt 1 ]; then
	t_fail sym_test_exit "sym_test ended with status $rc (crash or timeout)"
fi

# Hostile files (as root: the targets run as nobody). Every case has its
# own time limit; this one is for the whole run.
timeout 300 "$T/sym_hostile" "$T"
rc=$?
if [ $rc -gt 1 ]; then
	t_fail sym_hostile_exit "sym_hostile ended with status $rc (crash or timeout)"
fi

# debuginfod: a local server of dinfod/ (the only copy of target-dinfod's
# debug info), the symbolizer fetching it only when use_debuginfod is set.
if command -v debuginfod >/dev/null && command -v curl >/dev/null; then
	dtmp=$(mktemp -d /tmp/ember-dinfod.XXXXXX)
	port=$((20000 + RANDOM % 20000))
	debuginfod -p "$port" -d "$dtmp/db.sqlite" -F "$T/dinfod" >"$dtmp/log" 2>&1 &
	dpid=$!
	id=$(readelf -n "$T/target-dinfod" | awk '/Build ID:/ {print $3}')
	for _ in $(seq 100); do
		curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$id/debuginfo" && break
		sleep 0.2
	done
	# A debug file over the size cap is not downloaded: refused by the
	# server (X-DEBUGINFOD-MAXSIZE), then by the client, from a plain HTTP
	# server that ignores the header.
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$dtmp/cache0" \
		timeout 60 "$T/sym_test" "$T" --debuginfod-capped debuginfod
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$dtmp/cache" \
		timeout 60 "$T/sym_test" "$T" --debuginfod
	kill "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	if command -v python3 >/dev/null; then
		# 256 MiB: a transfer is stopped between reads (a 12 KB file
		# arrives whole in one and is refused only once it is there)
		mkdir -p "$dtmp/http/buildid/$id"
		cp "$T/dinfod/target-dinfod.debug" "$dtmp/http/buildid/$id/debuginfo"
		truncate -s 256M "$dtmp/http/buildid/$id/debuginfo"
		hport=$((port + 1))
		python3 -m http.server -b 127.0.0.1 -d "$dtmp/http" "$hport" >"$dtmp/http.log" 2>&1 &
		hpid=$!
		for _ in $(seq 100); do
			curl -sf -o /dev/null "http://127.0.0.1:$hport/buildid/$id/debuginfo" && break
			sleep 0.2
		done
		DEBUGINFOD_URLS="http://127.0.0.1:$hport" DEBUGINFOD_CACHE_PATH="$dtmp/cache1" \
			timeout 60 "$T/sym_test" "$T" --debuginfod-capped http
		kill "$hpid" 2>/dev/null
		wait "$hpid" 2>/dev/null
	else
		t_skip sym_debuginfod_capped_http "python3 not installed"
	fi
	# Nothing listens there now: lookups must not hang on it.
	DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$dtmp/cache2" \
		timeout 60 "$T/sym_test" "$T" --debuginfod-down
	rm -rf "$dtmp"
else
	t_skip sym_debuginfod "debuginfod (server) or curl not installed"
fi

# Stripped Go binaries: sym_go, then ember record -b bpf of one.
. selftests/agent/sym/go_e2e.sh
go_suite

# Cold: a fresh symbolizer reads maps and ELF files; warm: same addresses.
if b=$(timeout 120 "$T/sym_test" "$T" --bench 5000); then
	echo "# $b"
	cold=$(printf '%s' "$b" | sed -n 's/.*cold \([0-9.]*\) s.*/\1/p')
	if awk -v c="$cold" 'BEGIN { exit !(c != "" && c < 1.0) }'; then
		t_pass sym_bench_cold_under_1s
	else
		t_fail sym_bench_cold_under_1s "$b"
	fi
else
	t_fail sym_bench_cold_under_1s "bench failed"
fi
exit 0
