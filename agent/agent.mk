# agent/agent.mk: builds agent/ember from every agent/*/*.c (one folder per
# pipeline stage, see agent/README.md) plus the protobuf-c code generated
# from proto/**/*.proto. Other components join without editing this file:
# drop a .c into a folder of agent/ (a new folder is picked up too, and is
# on the include path), a .proto under proto/, or a make fragment into
# agent/mk/ (e.g. rules that embed assets).

AGENT_BIN := agent/ember

# Build options for images (README.md "Build options", docs/embedded.md):
# what an image leaves out, and how the libraries are linked.
#   EMBER_DEBUGINFOD=0  no --debuginfod: no libdebuginfod (nor its libcurl)
#   EMBER_BPF=0         no eBPF backend: no libbpf, no clang/bpftool build
#   EMBER_OTLP=none     no OTLP export (`ember run` refuses to start; ember
#                       record still writes .otlp files): no libcurl
#   EMBER_STATIC=1      every library but glibc linked in statically, from
#                       the -dev packages' .a files; libcurl too, which then
#                       has to be a small one: EMBER_CURL_PREFIX
#   EMBER_CURL_PREFIX=DIR  the libcurl installed under DIR (DIR/include,
#                       DIR/lib/libcurl.a and its .pc), e.g. the HTTP-only
#                       one scripts/build-min-curl.sh builds, instead of the
#                       system's (Debian's libcurl pulls 30 libraries)
EMBER_DEBUGINFOD ?= 1
EMBER_BPF ?= 1
EMBER_OTLP ?= curl
EMBER_STATIC ?= 0
EMBER_CURL_PREFIX ?=
ifeq ($(filter $(EMBER_OTLP),curl none),)
$(error EMBER_OTLP=$(EMBER_OTLP): say curl or none)
endif
ifeq ($(EMBER_STATIC),1)
ifneq ($(EMBER_DEBUGINFOD),0)
$(error EMBER_STATIC=1 needs EMBER_DEBUGINFOD=0: libdebuginfod comes as a shared library only)
endif
ifeq ($(EMBER_OTLP)$(EMBER_CURL_PREFIX),curl)
$(error EMBER_STATIC=1 with EMBER_OTLP=curl needs EMBER_CURL_PREFIX: a small libcurl, e.g. $$(scripts/build-min-curl.sh); Debian's static libcurl needs 30 more libraries)
endif
endif

AGENT_PKGS := libnl-genl-3.0 libdw libelf libprotobuf-c zlib \
	$(if $(filter 1,$(EMBER_BPF)),libbpf) \
	$(if $(and $(filter curl,$(EMBER_OTLP)),$(if $(EMBER_CURL_PREFIX),,y)),libcurl)
AGENT_VERSION := $(shell cat $(TOP)/VERSION 2>/dev/null || echo 0.0.0)

AGENT_PROTOS := $(shell find proto -name '*.proto' 2>/dev/null | sort)
AGENT_GEN_C := $(patsubst proto/%.proto,agent/gen/%.pb-c.c,$(AGENT_PROTOS))
AGENT_GEN_H := $(AGENT_GEN_C:.c=.h)

# agent/gen/ holds generated code, built by its own rules below.
AGENT_SRCS := $(filter-out agent/gen/%,$(wildcard agent/*.c agent/*/*.c))
# the options' left-out parts (the eBPF backend is linked weakly; the
# exporter has a stand-in that says how ember was built)
AGENT_SRCS := $(filter-out \
	$(if $(filter 0,$(EMBER_BPF)),agent/source/source_bpf%.c agent/source/status_bpf.c) \
	$(if $(filter none,$(EMBER_OTLP)),agent/export/otlp_export.c,agent/export/otlp_export_none.c),\
	$(AGENT_SRCS))
AGENT_OBJS := $(AGENT_SRCS:.c=.o) $(AGENT_GEN_C:.c=.o)
# Everything but main(): what unit tests link against.
AGENT_LIB_OBJS := $(filter-out agent/cli/main.o,$(AGENT_OBJS))

# Includes name their folder: "proc/proc.h" from the agent root,
# "uapi/ember.h" and "ember_unwind.h" from include/, "gen/..." for generated
# code. agent/gen is on the path only because protoc-c's headers include
# each other by their proto path; agent code spells them "gen/...".
# selftests/agent/test_layout.c checks every include against the folder
# rules in each folder's README ("May call").
AGENT_INC := -Iagent -Iinclude -Iagent/gen

# scripts/cross.mk sets AGENT_PKG_CONFIG to the arm64 sysroot's pkg-config.
AGENT_PKG_CONFIG ?= pkg-config
AGENT_PKG_CFLAGS = $(shell $(AGENT_PKG_CONFIG) --cflags $(AGENT_PKGS) 2>/dev/null) \
	$(if $(EMBER_CURL_PREFIX),-I$(EMBER_CURL_PREFIX)/include)
# glibc's own libraries stay shared: a static piece of glibc beside a
# shared libc.so breaks (NSS, dlopen), and every image has glibc.
AGENT_GLIBC_LIBS := -lpthread -pthread -lm -ldl -lrt -lresolv
AGENT_CURL_LIBS := $(if $(EMBER_CURL_PREFIX),$(if $(filter curl,$(EMBER_OTLP)),\
	$(EMBER_CURL_PREFIX)/lib/libcurl.a $(shell sed -n 's/^Libs.private: *//p' \
		$(EMBER_CURL_PREFIX)/lib/pkgconfig/libcurl.pc 2>/dev/null)))
ifeq ($(EMBER_STATIC),1)
AGENT_PKG_LIBS = -Wl,-Bstatic $(filter-out $(AGENT_GLIBC_LIBS),\
	$(shell $(AGENT_PKG_CONFIG) --static --libs $(AGENT_PKGS) 2>/dev/null) \
	$(if $(filter 1,$(EMBER_DEBUGINFOD)),-ldebuginfod) -liberty) -Wl,-Bdynamic \
	$(AGENT_CURL_LIBS) -lpthread $(AGENT_RPATH_LINK)
else
AGENT_PKG_LIBS = $(shell $(AGENT_PKG_CONFIG) --libs $(AGENT_PKGS) 2>/dev/null) \
	$(if $(filter 1,$(EMBER_DEBUGINFOD)),$(or $(shell $(AGENT_PKG_CONFIG) --libs \
		libdebuginfod 2>/dev/null),-ldebuginfod)) -liberty \
	$(AGENT_CURL_LIBS) $(AGENT_RPATH_LINK)
endif

# -Werror is off by default so one engineer's warning does not stop everyone's
# build; selftests/suites/10-agent-unit.sh checks the tree builds -Werror clean.
AGENT_WERROR ?= 0
AGENT_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE \
	-DEMBER_VERSION='"$(AGENT_VERSION)"' \
	$(if $(filter 0,$(EMBER_DEBUGINFOD)),-DEMBER_NO_DEBUGINFOD) \
	$(AGENT_INC) $(AGENT_PKG_CFLAGS) \
	$(if $(filter 1,$(AGENT_WERROR)),-Werror) $(EXTRA_CFLAGS)
AGENT_LDLIBS := $(AGENT_PKG_LIBS) -lm

# Extra objects/rules from other components (asset embedding, ...). A
# fragment may append to AGENT_OBJS (and AGENT_LIB_OBJS) and add rules.
-include $(sort $(wildcard agent/mk/*.mk))

# Unit tests: selftests/agent/test_*.c, each linked with the agent's objects;
# binaries go to agent/gen/tests/ (git-ignored).
AGENT_TEST_SRCS := $(wildcard selftests/agent/test_*.c)
AGENT_TEST_BINS := $(patsubst selftests/agent/%.c,agent/gen/tests/%,$(AGENT_TEST_SRCS))

ALL_TARGETS += $(AGENT_BIN)
# EMBER_BPF=0: nothing of bpf/ is built either (no clang, bpftool, BTF)
ifeq ($(EMBER_BPF),0)
ALL_TARGETS := $(filter-out $(BPF_OUT)/% $(BPF_AGENT_SKEL),$(ALL_TARGETS))
endif
CLEAN_FILES += $(AGENT_BIN) agent/*.o agent/*/*.o agent/gen $(AGENT_TEST_BINS)

# Relink when the set of objects changes (a file added or removed), not
# only when one is newer: the eBPF backend is linked weakly, and a binary
# built while source/source_bpf.c was absent would otherwise silently stay so.
AGENT_OBJS_LIST := agent/gen/objs.list
$(shell mkdir -p agent/gen && { echo '$(sort $(AGENT_OBJS))' | \
	cmp -s - $(AGENT_OBJS_LIST) 2>/dev/null || \
	echo '$(sort $(AGENT_OBJS))' >$(AGENT_OBJS_LIST); })

# The same for the build options: an object compiled under other ones
# (-DEMBER_NO_DEBUGINFOD, a libcurl's headers) is compiled again.
AGENT_OPTS_STAMP := agent/gen/build-options
AGENT_OPTS := DEBUGINFOD=$(EMBER_DEBUGINFOD) BPF=$(EMBER_BPF) OTLP=$(EMBER_OTLP) \
	STATIC=$(EMBER_STATIC) CURL_PREFIX=$(EMBER_CURL_PREFIX)
$(shell echo '$(AGENT_OPTS)' | cmp -s - $(AGENT_OPTS_STAMP) 2>/dev/null || \
	echo '$(AGENT_OPTS)' >$(AGENT_OPTS_STAMP))
$(AGENT_OBJS): $(AGENT_OPTS_STAMP)

$(AGENT_BIN): $(AGENT_OBJS) $(AGENT_OBJS_LIST)
	@echo "  LD      $@"
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $(AGENT_OBJS) $(AGENT_LDLIBS) $(LDFLAGS)

# Dependency files live under agent/gen/ (git-ignored, removed by clean).
agent/%.o: agent/%.c | $(AGENT_GEN_H)
	@echo "  CC      $@"
	$(Q)mkdir -p $(dir agent/gen/deps/$*)
	$(Q)$(CC) $(AGENT_CFLAGS) -MMD -MP -MF agent/gen/deps/$*.d -c -o $@ $<

# Every agent object waits for the generated headers. Naming them here,
# outside a pattern rule, is what makes them "ought to exist" for make: with
# only the order-only prerequisite of the pattern rule, a fresh clone (no
# agent/gen/ yet) fell back to make's built-in %.o rule and failed.
$(AGENT_SRCS:.c=.o): | $(AGENT_GEN_H)
# Keep generated code between builds (make deletes intermediates otherwise,
# and protoc-c would rerun every time).
.SECONDARY: $(AGENT_GEN_C) $(AGENT_GEN_H)

# Generated sources are intermediate files of a pattern chain: without
# this make deletes them after every build, and protoc-c runs again.
.SECONDARY: $(AGENT_GEN_C) $(AGENT_GEN_H)

agent/gen/%.pb-c.c agent/gen/%.pb-c.h: proto/%.proto
	@echo "  PROTOC  $<"
	$(Q)mkdir -p agent/gen
	$(Q)protoc-c -Iproto --c_out=agent/gen $<

agent/gen/%.pb-c.o: agent/gen/%.pb-c.c agent/gen/%.pb-c.h
	@echo "  CC      $@"
	$(Q)$(CC) $(AGENT_CFLAGS) -Wno-unused-parameter -c -o $@ $<

# The eBPF backend embeds the skeleton built by bpf/bpf.mk (every file of it
# includes it through source_bpf_internal.h).
ifneq ($(wildcard agent/source/source_bpf.c),)
ifneq ($(wildcard bpf/bpf.mk),)
$(patsubst %.c,%.o,$(wildcard agent/source/source_bpf*.c)): agent/gen/ember.skel.h
endif
endif


# End-to-end workload (selftests/agent/e2e/): frame pointers everywhere,
# clang when present since gcc drops the frame of leaf functions.
AGENT_PHASES := agent/gen/tests/ember-phases
AGENT_FAULTWORK := agent/gen/tests/faultwork
AGENT_NOSYS := agent/gen/tests/nosys
AGENT_MMAPWORK := agent/gen/tests/mmapwork
AGENT_PHASES_CC := $(if $(shell command -v $(CLANG) 2>/dev/null),$(CLANG),$(CC))

.PHONY: agent agent-tests agent-e2e
agent: $(AGENT_BIN)
agent-tests: $(AGENT_TEST_BINS) $(AGENT_BIN)
agent-e2e: $(AGENT_BIN) $(AGENT_PHASES) $(AGENT_FAULTWORK) $(AGENT_NOSYS) \
	$(AGENT_MMAPWORK)

# code mapped late, unmapped and mapped again (selftests/agent/mmap/)
$(AGENT_MMAPWORK): selftests/agent/mmap/mmapwork.c
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -Wall -o $@ $< -ldl

# a kernel without some system calls, for the agent's messages (suite 41)
$(AGENT_NOSYS): selftests/agent/e2e/nosys.c
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) -O2 -Wall -Wextra -o $@ $<

$(AGENT_PHASES): selftests/agent/e2e/phases.c
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(AGENT_PHASES_CC) -O1 -g -fno-omit-frame-pointer \
		-mno-omit-leaf-frame-pointer -pthread -Wall -o $@ $<

# page-fault ground truth (selftests/faults/): -O2, frame pointers, leaf too
$(AGENT_FAULTWORK): selftests/faults/faultwork.c
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-Wall -o $@ $<

agent/gen/tests/test_%: selftests/agent/test_%.c $(AGENT_LIB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) $(AGENT_CFLAGS) -Iselftests/agent -o $@ $< $(AGENT_LIB_OBJS) \
		$(AGENT_LDLIBS) $(LDFLAGS)

-include $(wildcard agent/gen/deps/*.d agent/gen/deps/*/*.d)
