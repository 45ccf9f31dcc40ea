# scripts/cross.mk: cross-building for arm64 on an x86-64 host (README.md,
# "Cross-building for arm64"). Included by the Makefile before the
# component fragments, so the settings below are in place when they read
# CC, pkg-config and the BPF target.
#
#   make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- [KDIR=<arm64 headers>]
#       agent/ember (aarch64), bpf/.output/arm64/ember.bpf.o
#       (-D__TARGET_ARCH_arm64) and, with KDIR, ember.ko for that kernel
#
# Libraries: the arm64 sysroot of scripts/fetch-arm64-sysroot.sh
# (<cache>/sysroot-arm64, fetched on first use), read through pkg-config
# with PKG_CONFIG_SYSROOT_DIR/PKG_CONFIG_LIBDIR; glibc is the cross
# toolchain's (gcc-aarch64-linux-gnu, scripts/install-deps.sh).
#
# vmlinux.h: an arm64 kernel's, dumped from the BTF that
# `scripts/fetch-kernels.sh --arch arm64 6.1` cuts out of Debian's arm64
# Image (the host's /sys/kernel/btf/vmlinux is x86-64's); without it, the
# hand-written bpf/vmlinux-min.h with the arm64 UAPI headers of the cross
# toolchain (asm/ptrace.h: struct user_pt_regs).
#
# One build per tree: the agent's objects and ember.ko are built in place,
# so the tree records the architecture it holds (agent/gen/build-arch) and
# refuses to mix: `make clean` when switching between arm64 and the host.

# goals that build nothing here (deb and rpm build in a staged copy)
CROSS_CLEAN_GOALS := clean help
CROSS_ELSEWHERE_GOALS := $(CROSS_CLEAN_GOALS) deb rpm
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(CROSS_ELSEWHERE_GOALS),$(MAKECMDGOALS)),all),)
CROSS_BUILD_ARCH := $(if $(filter arm64,$(ARCH)),arm64,host)
CROSS_PREV_ARCH := $(shell cat agent/gen/build-arch 2>/dev/null)
ifneq ($(CROSS_PREV_ARCH),)
ifneq ($(CROSS_PREV_ARCH),$(CROSS_BUILD_ARCH))
$(error this tree holds a build for $(CROSS_PREV_ARCH) (agent/gen/build-arch): run `make clean` before building for $(CROSS_BUILD_ARCH))
endif
endif
$(shell mkdir -p agent/gen && echo $(CROSS_BUILD_ARCH) >agent/gen/build-arch)
endif
CLEAN_FILES += bpf/.output/arm64

ifeq ($(ARCH),arm64)
export CROSS_COMPILE ?= aarch64-linux-gnu-
ifeq ($(origin CC),default)
CC := $(CROSS_COMPILE)gcc
endif
CROSS_CACHE := $(or $(EMBER_CACHE),$(TOP)/.cache)
ARM64_SYSROOT := $(CROSS_CACHE)/sysroot-arm64
ARM64_LIBDIR := $(ARM64_SYSROOT)/usr/lib/aarch64-linux-gnu
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(CROSS_CLEAN_GOALS),$(MAKECMDGOALS)),all),)
# fetched when missing or older than the script (its package list)
ifneq ($(shell [ scripts/fetch-arm64-sysroot.sh -nt $(ARM64_SYSROOT)/.packages ] && echo stale),)
$(info cross: arm64 sysroot missing or outdated: scripts/fetch-arm64-sysroot.sh)
$(if $(shell EMBER_CACHE=$(CROSS_CACHE) scripts/fetch-arm64-sysroot.sh >&2 && echo ok),,\
	$(error cross: scripts/fetch-arm64-sysroot.sh failed))
endif
endif
ARM64_PKG_CONFIG := PKG_CONFIG_SYSROOT_DIR=$(ARM64_SYSROOT) \
	PKG_CONFIG_LIBDIR=$(ARM64_LIBDIR)/pkgconfig:$(ARM64_SYSROOT)/usr/share/pkgconfig pkg-config
# agent/agent.mk's pkg-config, reading the sysroot instead. -rpath-link:
# the libraries' own dependencies (libcurl's) are found there at link time.
AGENT_PKG_CONFIG := $(ARM64_PKG_CONFIG)
AGENT_RPATH_LINK := -Wl,-rpath-link,$(ARM64_LIBDIR)

# eBPF: arm64 register layout for bpf_tracing.h, an arm64 vmlinux.h, and
# outputs of their own.
override BPF_ARCH := arm64
BPF_OUT := bpf/.output/arm64
BPF_VMLINUX_BTF ?= $(CROSS_CACHE)/kernels-arm64/6.1/vmlinux.btf
# bpf.mk adds -idirafter /usr/include/<multiarch> for asm/; the cross
# toolchain keeps arm64's under /usr/aarch64-linux-gnu/include.
override BPF_MULTIARCH := ../aarch64-linux-gnu/include

# make deb: arm64 packages in build/deb-arm64/, built in a staged copy
# (packaging/debian/rules cross-builds the agent with the same sysroot; -d:
# no arm64 Build-Depends are installed in the host's dpkg).
DEB_OUT ?= build/deb-arm64
DEB_CROSS_FLAGS := -a arm64 -d
export EMBER_CACHE := $(CROSS_CACHE)

# plain `make`: ember.ko for KDIR (an arm64 kernel build dir), if given
override RUNNING_KDIR := $(or $(KDIR),KDIR-not-set)
endif
