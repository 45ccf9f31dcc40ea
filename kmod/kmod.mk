# kmod/kmod.mk: ember.ko and its guest-side test programs.
#
#   make module KDIR=<kernel build dir>        configure probes + ember.ko here
#   make module-check KDIR=<kernel build dir>  W=1, sparse (C=2), checkpatch --strict
#   make kmod-guest                            selftests/kmod/bin/ (VM test programs)
#   plain make: ember.ko for the running kernel when its headers exist.
#
# Kernel differences are found by kmod/configure.sh, which compiles
# kmod/probes/*.c against KDIR and writes ember_config.h into a directory of
# its own per KDIR under .cache/kmod/, where kbuild also builds (from copies
# of the sources), so kernels never mix configurations or objects.

KMOD_CACHE := $(TOP)/.cache/kmod
RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
# One directory per kernel build dir: ember_config.h, and private copies of
# the sources that kbuild builds in, so builds for different kernels (or a
# module-check next to a build) never share objects, even concurrently in
# one working tree. cp -p keeps mtimes: kbuild stays incremental.
kmod_cfgdir = $(KMOD_CACHE)/$(subst /,_,$(abspath $(KDIR)))
KMOD_COPY = mkdir -p $(1)/kmod $(1)/include/uapi && \
	cp -p $(TOP)/Kbuild $(1)/ && \
	cp -p $(TOP)/kmod/*.c $(TOP)/kmod/*.h $(1)/kmod/ && \
	cp -p $(TOP)/include/uapi/ember.h $(1)/include/uapi/ && \
	cp -p $(TOP)/include/ember_unwind.h $(TOP)/include/ember_clock.h \
		$(1)/include/
# EMBER_MODVERSION: the module's MODULE_VERSION (modinfo, /sys/module/ember/
# version) is the release in ./VERSION, so an operator sees which release
# is built and which is loaded.
KMOD_MAKE = $(MAKE) -C $(KDIR) EMBER_CONFIG_DIR=$(kmod_cfgdir) \
	EMBER_MODVERSION=$(shell cat $(TOP)/VERSION 2>/dev/null)
CHECKPATCH := $(TOP)/.cache/linux-source-6.1/scripts/checkpatch.pl

.PHONY: module module-check module-selftest kmod-default kmod-guest kmod-configure
ALL_TARGETS += kmod-default
CLEAN_FILES += ember.ko ember-selftest.ko ember_nmi_test.ko ember.mod ember.mod.c ember.mod.o ember.o \
	modules.order Module.symvers .ember*.cmd .modules.order.cmd \
	.Module.symvers.cmd kmod/*.o kmod/.*.cmd kmod/*.o.d \
	selftests/kmod/bin .cache/kmod

kmod-default:
	$(Q)if [ -d $(RUNNING_KDIR) ]; then \
		$(MAKE) --no-print-directory module KDIR=$(RUNNING_KDIR); \
	else \
		echo "kmod: no headers for the running kernel ($(RUNNING_KDIR)): ember.ko not built (make module KDIR=...)"; \
	fi

kmod-configure:
	$(Q)[ -n "$(KDIR)" ] || { echo "kmod: set KDIR=<kernel build dir>" >&2; exit 2; }
	$(Q)[ -e $(KDIR)/Makefile ] || { echo "kmod: $(KDIR) is not a kernel build dir (no Makefile); install the kernel headers" >&2; exit 2; }
	$(Q)mkdir -p $(kmod_cfgdir)
	$(Q)if [ ! -f $(kmod_cfgdir)/ember_config.h ] || \
	    [ -n "$$(find $(TOP)/kmod/probes $(TOP)/kmod/configure.sh -newer $(kmod_cfgdir)/ember_config.h 2>/dev/null)" ]; then \
		echo "  CONFIGURE $(KDIR)"; \
		sh $(TOP)/kmod/configure.sh $(abspath $(KDIR)) $(kmod_cfgdir); \
	fi

module: kmod-configure
	$(Q)$(call KMOD_COPY,$(kmod_cfgdir)/build)
	$(Q)+$(KMOD_MAKE) M=$(kmod_cfgdir)/build modules
	@# atomic: a concurrent build for another kernel never leaves half a file
	$(Q)cp $(kmod_cfgdir)/build/ember.ko $(TOP)/.ember.ko.$$$$ && \
		mv -f $(TOP)/.ember.ko.$$$$ $(TOP)/ember.ko
	$(Q)echo "kmod: built $(TOP)/ember.ko for $$(cat $(KDIR)/include/config/kernel.release 2>/dev/null)"

# checkpatch.pl comes from Debian's linux-source-6.1 (scripts/install-deps.sh)
$(CHECKPATCH):
	$(Q)[ -f /usr/src/linux-source-6.1.tar.xz ] || { echo "kmod: /usr/src/linux-source-6.1.tar.xz missing: run scripts/install-deps.sh" >&2; exit 2; }
	$(Q)mkdir -p $(TOP)/.cache
	$(Q)tar -C $(TOP)/.cache -xJf /usr/src/linux-source-6.1.tar.xz \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	$(Q)touch $@

# Test build: ember.ko with the NMI test hook (never shipped) as
# ember-selftest.ko, and selftests/kmod/nmi's ember_nmi_test.ko against it.
module-selftest: kmod-configure
	$(Q)$(call KMOD_COPY,$(kmod_cfgdir)/selftest)
	$(Q)+$(KMOD_MAKE) M=$(kmod_cfgdir)/selftest EMBER_SELFTEST=y modules
	$(Q)mkdir -p $(kmod_cfgdir)/nmi && \
		cp -p $(TOP)/selftests/kmod/nmi/Kbuild $(TOP)/selftests/kmod/nmi/*.c \
		$(kmod_cfgdir)/nmi/
	$(Q)+$(KMOD_MAKE) M=$(kmod_cfgdir)/nmi \
		KBUILD_EXTRA_SYMBOLS=$(kmod_cfgdir)/selftest/Module.symvers modules
	$(Q)cp $(kmod_cfgdir)/selftest/ember.ko $(TOP)/ember-selftest.ko
	$(Q)cp $(kmod_cfgdir)/nmi/ember_nmi_test.ko $(TOP)/ember_nmi_test.ko
	$(Q)echo "kmod: built ember-selftest.ko and ember_nmi_test.ko"

# Fails on any W=1 or sparse warning from kmod/ and on any checkpatch
# warning or check.
module-check: kmod-configure $(CHECKPATCH)
	$(Q)rm -rf $(kmod_cfgdir)/check
	$(Q)$(call KMOD_COPY,$(kmod_cfgdir)/check)
	$(Q)+$(KMOD_MAKE) M=$(kmod_cfgdir)/check W=1 C=2 modules \
		>$(kmod_cfgdir)/check.log 2>&1; rc=$$?; cat $(kmod_cfgdir)/check.log; \
		[ $$rc -eq 0 ] || { echo "kmod: W=1/sparse build failed" >&2; exit 1; }
	@# every warning counts: one raised by a macro of ours is reported at
	@# the kernel header that defines the macro, not at kmod/
	$(Q)if grep -E '(warning|error):' $(kmod_cfgdir)/check.log; then \
		echo "kmod: W=1/sparse warnings above" >&2; exit 1; fi
	$(Q)perl $(CHECKPATCH) --no-tree --strict --terse --show-types \
		--ignore SPDX_LICENSE_TAG -f $(TOP)/kmod/*.c $(TOP)/kmod/*.h \
		$(TOP)/include/ember_unwind.h $(TOP)/include/ember_clock.h \
		$(TOP)/kmod/probes/*.c
	$(Q)echo "kmod: W=1, sparse and checkpatch --strict clean for $(KDIR)"

# ---- guest-side test programs (selftests/kmod/) ----
KG_DIR := $(TOP)/selftests/kmod
KG_BIN := $(KG_DIR)/bin
KG_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -g -I$(TOP)/include
# frame pointers everywhere, in the leaves too: clang honours it (gcc 12
# drops the frame setup of leaf functions)
KG_FP_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O1 -g -no-pie -fno-optimize-sibling-calls \
	-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
KG_PROGS := $(KG_BIN)/ember-test $(KG_BIN)/fpbusy $(KG_BIN)/sysbusy \
	$(KG_BIN)/offcpu-work $(KG_BIN)/runas $(KG_BIN)/compat32 \
	$(KG_BIN)/ticker $(KG_BIN)/exitrace $(KG_BIN)/allocprobe \
	$(KG_BIN)/lockwork-mini

kmod-guest: $(KG_PROGS) $(KG_BIN)/fpbusy.nm $(KG_BIN)/sysbusy.nm \
	$(KG_BIN)/offcpu-work.nm $(KG_BIN)/compat32.nm $(KG_BIN)/lockwork-mini.nm

$(KG_BIN):
	$(Q)mkdir -p $@

$(KG_BIN)/ember-test: $(KG_DIR)/ember-test.c $(TOP)/include/uapi/ember.h \
		$(TOP)/include/ember_unwind.h | $(KG_BIN)
	$(Q)$(CC) $(KG_CFLAGS) $$(pkg-config --cflags libnl-genl-3.0) -o $@ $< \
		$$(pkg-config --libs libnl-genl-3.0)

$(KG_BIN)/runas $(KG_BIN)/ticker: $(KG_BIN)/%: $(KG_DIR)/%.c | $(KG_BIN)
	$(Q)$(CC) $(KG_CFLAGS) -o $@ $<

$(KG_BIN)/exitrace: $(KG_DIR)/exitrace.c | $(KG_BIN)
	$(Q)$(CC) $(KG_CFLAGS) -pthread -o $@ $<

$(KG_BIN)/fpbusy $(KG_BIN)/sysbusy $(KG_BIN)/offcpu-work $(KG_BIN)/lockwork-mini: $(KG_BIN)/%: $(KG_DIR)/%.c | $(KG_BIN)
	$(Q)$(CLANG) $(KG_FP_CFLAGS) -pthread -o $@ $<

# the allocation-probe test reads its symbols and file offsets itself
$(KG_BIN)/allocprobe: $(KG_DIR)/allocprobe.c | $(KG_BIN)
	$(Q)$(CLANG) $(KG_FP_CFLAGS) -o $@ $<

# a 32-bit task without libc (no multilib needed): compat walks stay safe.
# i386 on x86-64; for arm64 (ARCH=arm64) an AArch32 program, linked by lld
ifeq ($(ARCH),arm64)
KG_C32_FLAGS := --target=armv7a-linux-gnueabihf -marm -fuse-ld=lld
else
KG_C32_FLAGS := -m32 -mno-omit-leaf-frame-pointer
endif
$(KG_BIN)/compat32: $(KG_DIR)/compat32.c | $(KG_BIN)
	$(Q)$(CLANG) $(KG_C32_FLAGS) -O1 -g -ffreestanding -nostdlib -static -fno-pic \
		-fno-omit-frame-pointer -fno-optimize-sibling-calls \
		-Wall -Wextra -Werror -o $@ $<

# symbol tables for the guest: the test client maps user addresses with them
# (without ARM's $a/$d/$t mapping symbols, which share functions' addresses)
$(KG_BIN)/%.nm: $(KG_BIN)/%
	$(Q)nm -n --defined-only $< > $@.tmp && \
		grep -v ' \$$[adtx]' $@.tmp > $@; rm -f $@.tmp
