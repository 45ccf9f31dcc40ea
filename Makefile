# ember: top-level build.
#
# Each component owns a make fragment next to its sources and adds to the
# lists below; this file only ties them together:
#   ALL_TARGETS    built by plain `make`
#   CLEAN_FILES    removed by `make clean`
#   .PHONY targets module, deb, rpm, bench, install... live in the fragments.
#
# `make`            agent, eBPF objects, and ember.ko when kernel headers exist
# `make module KDIR=/path/to/kernel/build`   ember.ko in this directory
# `make test`       every test suite (scripts/test.sh also installs deps)

.DEFAULT_GOAL := all
SHELL := /bin/bash
TOP := $(CURDIR)

PREFIX ?= /usr
DESTDIR ?=
CC ?= gcc
CLANG ?= clang
V ?= 0
ifeq ($(V),0)
Q := @
else
Q :=
endif

ALL_TARGETS :=
CLEAN_FILES :=

# `make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-`: set up before the fragments
-include scripts/cross.mk
-include kmod/kmod.mk
-include bpf/bpf.mk
-include agent/agent.mk
-include selftests/selftests.mk
-include packaging/packaging.mk
-include bench/bench.mk
-include preload/preload.mk

.PHONY: all test clean
all: $(ALL_TARGETS)

test: all
	$(Q)selftests/run.sh

clean:
	$(Q)rm -rf $(CLEAN_FILES)
