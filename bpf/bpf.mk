# bpf/bpf.mk: ember's CO-RE eBPF programs and their libbpf skeleton.
#
#   bpf/.output/vmlinux.h      kernel types, dumped from the build host's BTF
#                              (/sys/kernel/btf/vmlinux) with bpftool; CO-RE
#                              relocates them to the running kernel at load.
#   bpf/.output/ember.bpf.o    clang -target bpf -O2 -g of bpf/ember.bpf.c, the
#                              one translation unit: it includes the parts
#                              bpf/*.bpf.h (shared ones, one per concern)
#   bpf/.output/ember.skel.h   bpftool gen skeleton, copied to
#                              agent/gen/ember.skel.h, where the agent's
#                              loader (agent/source/source_bpf*.c, through
#                              source_bpf_internal.h) includes it as
#                              "gen/ember.skel.h"
#   make bpf-tests             test programs used by selftests/suites/20-bpf.sh
#   BPF_EXTRA_CFLAGS=...       added to clang's flags: measurement builds only
#                              (bench/python-cost.sh --floor: EMBER_PY_FLOOR)
#
# Without BTF on the build host, vmlinux.h comes from bpf/vmlinux-min.h, a
# hand-written subset holding only the types and fields the programs use
# (CO-RE still relocates every field access at load time).

BPF_OUT ?= bpf/.output
BPFTOOL ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
BPF_VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
# the multiarch directory holds asm/ for the linux/ UAPI headers that
# bpf/vmlinux-min.h includes
BPF_MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	-I$(BPF_OUT) -Ibpf -Iinclude \
	$(if $(BPF_MULTIARCH),-idirafter /usr/include/$(BPF_MULTIARCH)) \
	$(BPF_EXTRA_CFLAGS)

BPF_AGENT_SKEL := agent/gen/ember.skel.h
ALL_TARGETS += $(BPF_OUT)/ember.skel.h $(BPF_AGENT_SKEL)
CLEAN_FILES += $(BPF_OUT)

.PHONY: bpf bpf-tests
bpf: $(BPF_OUT)/ember.skel.h $(BPF_AGENT_SKEL)

$(BPF_OUT)/vmlinux.h:
	$(Q)mkdir -p $(BPF_OUT)
	$(Q)if [ -r $(BPF_VMLINUX_BTF) ]; then \
		echo "  BTF     $@ (from $(BPF_VMLINUX_BTF))"; \
		$(BPFTOOL) btf dump file $(BPF_VMLINUX_BTF) format c > $@.tmp.$$$$ && \
		mv $@.tmp.$$$$ $@; \
	else \
		echo "  BTF     $@: $(BPF_VMLINUX_BTF) not found on this build host;" \
			"using the hand-written subset bpf/vmlinux-min.h" \
			"(CO-RE relocates it at load time)"; \
		cp bpf/vmlinux-min.h $@; \
	fi

# ember.bpf.c includes every part (bpf/*.bpf.h): editing any of them rebuilds
BPF_PARTS := $(wildcard bpf/*.bpf.h)
$(BPF_OUT)/ember.bpf.o: bpf/ember.bpf.c $(BPF_PARTS) include/ember_bpf.h \
		include/ember_unwind.h include/ember_clock.h include/uapi/ember.h \
		$(BPF_OUT)/vmlinux.h
	@echo "  CLANG   $@"
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The skeleton the agent embeds keeps .BTF and .BTF.ext (CO-RE) but not
# the DWARF of -g: 1.4 MiB -> ~0.45 MiB in every agent binary (images count
# it). ember.bpf.o itself keeps its DWARF for bpftool and llvm-objdump -S.
LLVM_STRIP ?= $(or $(shell command -v llvm-strip 2>/dev/null),true)
$(BPF_OUT)/ember.skel.h: $(BPF_OUT)/ember.bpf.o
	@echo "  GEN     $@"
	$(Q)cp $< $@.o.tmp.$$$$ && $(LLVM_STRIP) -g $@.o.tmp.$$$$ && \
		$(BPFTOOL) gen skeleton $@.o.tmp.$$$$ name ember_bpf > $@.tmp.$$$$ && \
		mv $@.tmp.$$$$ $@; r=$$?; rm -f $@.o.tmp.$$$$; exit $$r

$(BPF_AGENT_SKEL): $(BPF_OUT)/ember.skel.h
	$(Q)mkdir -p $(dir $@)
	$(Q)cp $< $@.tmp.$$$$ && mv $@.tmp.$$$$ $@

# Test programs (selftests/bpf/): the record dumper, linked with the
# backend exactly as the agent links it, and workloads with known stacks.
BPF_TEST_OUT := $(BPF_OUT)/tests
# Recursive (=): AGENT_INC comes from agent/agent.mk, included after this file.
BPF_TEST_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE \
	$(AGENT_INC)
BPF_TEST_BINS := $(BPF_TEST_OUT)/bpf-dump $(BPF_TEST_OUT)/ring-fuzz \
	$(BPF_TEST_OUT)/fp-burn \
	$(BPF_TEST_OUT)/syscall-burn $(BPF_TEST_OUT)/offcpu-wait \
	$(BPF_TEST_OUT)/lock-wait

bpf-tests: $(BPF_TEST_BINS)

# The agent's eBPF backend: source_bpf.c (the core) and its parts, one per
# concern plus the unwind maps (agent/source/source_bpf_internal.h).
BPF_AGENT_PARTS := $(filter-out agent/source/source_bpf.c,\
	$(wildcard agent/source/source_bpf_*.c)) \
	$(wildcard agent/source/kmem_budget.c)
BPF_AGENT_DEPS := agent/source/source_bpf.c $(BPF_AGENT_PARTS) \
	agent/source/source_bpf_internal.h agent/source/record.c \
	agent/source/source.h include/ember_bpf.h $(BPF_AGENT_SKEL)

$(BPF_TEST_OUT)/bpf-dump: selftests/bpf/bpf-dump.c $(BPF_AGENT_DEPS) \
		agent/proc/pac_mask.c agent/proc/pac_mask.h
	@echo "  CC      $@"
	$(Q)mkdir -p $(BPF_TEST_OUT)
	$(Q)$(CC) $(BPF_TEST_CFLAGS) -o $@ selftests/bpf/bpf-dump.c \
		agent/source/source_bpf.c $(BPF_AGENT_PARTS) agent/source/record.c \
		agent/proc/pac_mask.c -lbpf -lelf -lz -lpthread

# The reader fed random records, under ASan/UBSan (ring-fuzz.c includes
# source_bpf.c to reach its static reader).
$(BPF_TEST_OUT)/ring-fuzz: selftests/bpf/ring-fuzz.c $(BPF_AGENT_DEPS)
	@echo "  CC      $@"
	$(Q)mkdir -p $(BPF_TEST_OUT)
	$(Q)$(CC) $(BPF_TEST_CFLAGS) -fsanitize=address,undefined \
		-fno-sanitize-recover=all -o $@ selftests/bpf/ring-fuzz.c \
		$(BPF_AGENT_PARTS) agent/source/record.c -lbpf -lelf -lz -lpthread

# Frame pointers everywhere, leaf functions included: clang honours
# -mno-omit-leaf-frame-pointer, gcc 12 does not.
BPF_FP_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-inline -Wall -Werror

$(BPF_TEST_OUT)/%: selftests/bpf/%.c
	@echo "  CLANG   $@"
	$(Q)mkdir -p $(BPF_TEST_OUT)
	$(Q)$(CLANG) $(BPF_FP_CFLAGS) -o $@ $< -lpthread
