# bench/bench.mk: `make bench`, ember's cost measured side by side with
# perf and offcputime on the same workloads (bench/README.md).
#
#   make bench                  full run (~15-20 min on 2 cores)
#   make bench BENCH_QUICK=1    short run (a few minutes)
#   make bench BENCH_DRY=1      seconds-long dry run (proves the scripts work)
#   make bench BENCH_OUT=DIR    write the report to DIR instead of
#                               bench/results/<date>-<host>/
#   BENCH_VM_KERNELS="6.1"      test kernels for the module part ("" skips it)
#
# Benchmarks are not tests: selftests/suites/70-bench-smoke.sh only runs
# the dry mode and checks the report's sections.

BENCH_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread
BENCH_WORKLOADS := .cache/bench/spin .cache/bench/pingpong .cache/bench/mallocs \
	.cache/bench/touch .cache/bench/deep .cache/bench/lockwork

.cache/bench/%: bench/workloads/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $<

# deep stacks without frame pointers: every frame unwound with the tables
.cache/bench/deep: bench/workloads/deep.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(filter-out -fno-omit-frame-pointer,$(BENCH_CFLAGS)) \
		-fomit-frame-pointer -fasynchronous-unwind-tables -o $@ $<

# the lock ground truth's --bench mode (selftests/lock/lockwork.c)
.cache/bench/lockwork: selftests/lock/lockwork.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $<

.PHONY: bench bench-workloads
bench-workloads: $(BENCH_WORKLOADS)

bench: agent $(PRELOAD_LIB) $(BENCH_WORKLOADS)
	$(Q)python3 bench/bench.py \
		$(if $(filter-out 0,$(BENCH_QUICK)),--quick) \
		$(if $(filter-out 0,$(BENCH_DRY)),--dry) \
		$(if $(BENCH_OUT),--out $(BENCH_OUT))

CLEAN_FILES += .cache/bench
