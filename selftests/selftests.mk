# selftests/selftests.mk: test kernels and the VM harness.
#
#   make kernels        fetch Debian's 5.10/6.1/6.12 test kernels into .cache/
#   make vm-selftest    the VM harness's own suite (29-vm-harness)
#   make kmod-vm        ember.ko on every test kernel in qemu (30-kmod-vm)
# See selftests/vm/README.md.

.PHONY: kernels vm-selftest kmod-vm
kernels:
	$(Q)$(TOP)/scripts/fetch-kernels.sh

vm-selftest:
	$(Q)SUITES="29-vm-harness" $(TOP)/selftests/run.sh

kmod-vm:
	$(Q)SUITES="30-kmod-vm" $(TOP)/selftests/run.sh

# No-frame-pointer ground truth for the CFI unwinders (selftests/unwind/):
# the same sources built the way distributions build, with gcc and with
# clang, into agent/gen/tests/unwind-{gcc,clang}/.
UNWIND_WORK_DIRS := agent/gen/tests/unwind-gcc agent/gen/tests/unwind-clang
UNWIND_NOFP_FLAGS := -O2 -g -fomit-frame-pointer
.PHONY: unwind-work
unwind-work: $(addsuffix /nofp-work,$(UNWIND_WORK_DIRS)) agent/gen/tests/jit-work

# JIT code (an anonymous mapping named by a perf map) called from C
# without frame pointers.
agent/gen/tests/jit-work: selftests/unwind/jit_work.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)gcc $(UNWIND_NOFP_FLAGS) -o $@ $<

agent/gen/tests/unwind-%/nofp-work: selftests/unwind/nofp_work.c \
		selftests/unwind/nofp_liba.c selftests/unwind/nofp_libb.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(if $(filter clang,$*),$(CLANG),gcc) $(UNWIND_NOFP_FLAGS) -fPIC -shared \
		-o $(@D)/libnofp_a.so selftests/unwind/nofp_liba.c
	$(Q)$(if $(filter clang,$*),$(CLANG),gcc) $(UNWIND_NOFP_FLAGS) -fPIC -shared \
		-o $(@D)/libnofp_b.so selftests/unwind/nofp_libb.c
	$(Q)$(if $(filter clang,$*),$(CLANG),gcc) $(UNWIND_NOFP_FLAGS) \
		-o $@ selftests/unwind/nofp_work.c -L$(@D) -lnofp_a \
		-Wl,-rpath,'$$ORIGIN' -ldl

# libFuzzer harnesses (selftests/fuzz/, run by suite 15-fuzz): the code
# under test is compiled with ASan/UBSan and coverage; the rest of the
# agent is linked as built.
FUZZ_DIR := agent/gen/fuzz
FUZZ_CFLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-std=gnu11 -D_GNU_SOURCE $(AGENT_INC) $(AGENT_PKG_CFLAGS)
FUZZ_INSTR_SRCS := agent/source/record.c agent/aggregate/aggregate.c \
	agent/aggregate/lock_join.c agent/aggregate/profile_freeze.c \
	agent/output/output_folded.c agent/unwind/unwind_check.c \
	agent/unwind/cfi_compile.c agent/unwind/cfa_program.c agent/cli/cmd_decode.c \
	agent/python/py_detect.c agent/python/py_code.c agent/proc/kmaps.c
FUZZ_INSTR_OBJS := $(patsubst agent/%.c,$(FUZZ_DIR)/%.o,$(FUZZ_INSTR_SRCS))
FUZZ_REST_OBJS := $(filter-out $(FUZZ_INSTR_SRCS:.c=.o),$(AGENT_LIB_OBJS))
FUZZERS := $(FUZZ_DIR)/fuzz_cfi $(FUZZ_DIR)/fuzz_record $(FUZZ_DIR)/fuzz_decode \
	$(FUZZ_DIR)/fuzz_table $(FUZZ_DIR)/fuzz_gopcln $(FUZZ_DIR)/fuzz_python
.PHONY: fuzzers
fuzzers: $(FUZZERS)

$(FUZZ_DIR)/%.o: agent/%.c | $(AGENT_GEN_H)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_DIR)/fuzz_cfi: selftests/fuzz/fuzz_cfi.c $(FUZZ_DIR)/unwind/cfi_compile.o \
		$(FUZZ_DIR)/unwind/cfa_program.o
	@echo "  FUZZ    $@"
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -lelf -ldw

# Go's function table reader (.gopclntab): the reader instrumented, the
# string table and warnings as built
$(FUZZ_DIR)/fuzz_gopcln: selftests/fuzz/fuzz_gopcln.c $(FUZZ_DIR)/symbolize/sym_gopclntab.o \
		agent/symbolize/sym_elf_image.o agent/symbolize/sym_intern.o \
		agent/lib/hash_index.o agent/lib/safe_file.o
	@echo "  FUZZ    $@"
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -ldw -lelf

# the shared table checker alone: a header, instrumented in the harness
$(FUZZ_DIR)/fuzz_table: selftests/fuzz/fuzz_table.c include/ember_unwind.h \
		include/uapi/ember.h
	@echo "  FUZZ    $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $<

$(FUZZ_DIR)/fuzz_%: selftests/fuzz/fuzz_%.c $(FUZZ_INSTR_OBJS) $(FUZZ_REST_OBJS)
	@echo "  FUZZ    $@"
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_INSTR_OBJS) \
		$(FUZZ_REST_OBJS) $(AGENT_LDLIBS) $(LDFLAGS)

# Lock contention ground truth (selftests/lock/, issue 27): lockwork built
# the way distributions build (-O2, no frame pointers) and, as lockwork-fp,
# with frame pointers; futexstorm, the bad-input workload.
LOCK_WORK := agent/gen/tests/lockwork agent/gen/tests/lockwork-fp \
	agent/gen/tests/futexstorm
.PHONY: lock-work
lock-work: $(LOCK_WORK)

agent/gen/tests/lockwork: selftests/lock/lockwork.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -Wall -pthread -o $@ $<

agent/gen/tests/lockwork-fp: selftests/lock/lockwork.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-Wall -pthread -o $@ $<

agent/gen/tests/futexstorm: selftests/lock/futexstorm.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -Wall -pthread -o $@ $<

# CPython frames in the eBPF backend (selftests/bpf/check-python.sh): the
# backend on running processes, their unwind tables bound by the agent's
# unwind service, Python described by the test (not by the agent)
.PHONY: py-bpf-tests
py-bpf-tests: agent/gen/tests/py-bpf-dump

agent/gen/tests/py-bpf-dump: selftests/bpf/py-bpf-dump.c $(AGENT_LIB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $< $(AGENT_LIB_OBJS) $(AGENT_LDLIBS) $(LDFLAGS)

# which --stack-copy size covers real programs (docs/NOTES.md, issue 25.4)
agent/gen/tests/copy-sizes: selftests/unwind/copy_sizes.c $(AGENT_LIB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $< $(AGENT_LIB_OBJS) $(AGENT_LDLIBS) $(LDFLAGS)
