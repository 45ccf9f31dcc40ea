# agent/mk/sym-tests.mk: the symbolizer's extra libraries and its tests.
#
# `make sym-tests` builds, under agent/gen/sym-tests/, the test runner
# (selftests/agent/sym/sym_test.c linked with the symbolizer objects only)
# and the binaries it symbolizes: one C target in many variants (PIE,
# non-PIE, -O0/-O2 with -g, no -g, stripped, stripped + .gnu_debuglink,
# stripped + build-id debug file in a private debug root), a shared library
# with p_vaddr != p_offset, and a C++ program. selftests/suites/11-symbolize.sh
# runs them.

SYM_T := agent/gen/sym-tests
SYM_S := selftests/agent/sym
SYM_OBJS := agent/symbolize/symbolize.o agent/lib/hash_index.o agent/lib/safe_file.o \
	agent/proc/proc_maps.o agent/proc/exec_snap.o agent/proc/kmaps.o agent/proc/proc.o agent/proc/proc_read.o \
	agent/proc/container.o $(patsubst %.c,%.o,$(wildcard agent/symbolize/sym_*.c)) \
	$(patsubst %.c,%.o,$(wildcard agent/python/*.c))
SYM_LIBS := $(AGENT_PKG_LIBS) -liberty \
	$(shell pkg-config --libs libdebuginfod 2>/dev/null || echo -ldebuginfod) -lz
SYM_TCC := $(CC) -std=gnu11 -Wall -Wextra -Wl,--build-id -L$(SYM_T)
# Targets find libsymtest.so next to themselves (also when copied away).
SYM_RPATH := -Wl,-rpath,'$$$$ORIGIN'
SYM_VARIANTS := target-g target-O2 target-nopie target-nog target-stripped \
	target-dbglink target-buildid target-dinfod target-gz target-nobid \
	target-badlink
SYM_TEST_BINS := $(SYM_T)/sym_test $(SYM_T)/sym_hostile $(SYM_T)/libsymtest.so \
	$(SYM_T)/cxx $(addprefix $(SYM_T)/,$(SYM_VARIANTS))

CLEAN_FILES += $(SYM_T)
.PHONY: sym-tests
sym-tests: $(SYM_TEST_BINS)

$(SYM_T)/sym_test: $(SYM_S)/sym_test.c $(SYM_OBJS) agent/symbolize/symbolize_internal.h \
		$(SYM_S)/sym_check.h
	@echo "  CC      $@"
	$(Q)mkdir -p $(SYM_T)
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $< $(SYM_OBJS) $(SYM_LIBS)

# Hostile debug links and mapped files, symbolized as root (issue 14).
$(SYM_T)/sym_hostile: $(SYM_S)/sym_hostile.c $(SYM_OBJS) agent/symbolize/symbolize_internal.h \
		$(SYM_S)/sym_check.h
	@echo "  CC      $@"
	$(Q)mkdir -p $(SYM_T)
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $< $(SYM_OBJS) $(SYM_LIBS)

$(SYM_T)/libsymtest.so: $(SYM_S)/symlib.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(SYM_T)
	$(Q)$(SYM_TCC) -O1 -g -shared -fPIC -Wl,-Ttext-segment=0x10000 -o $@ $<

# $(call sym_target,NAME,CFLAGS)
define sym_target
$(SYM_T)/$(1): $(SYM_S)/target.c $(SYM_T)/libsymtest.so
	@echo "  CC      $$@"
	$(Q)$(SYM_TCC) $(SYM_RPATH) $(2) -DVARIANT='"$(1)"' -o $$@ $$< -lsymtest
endef
$(eval $(call sym_target,target-g,-O0 -g -fPIE -pie))
$(eval $(call sym_target,target-O2,-O2 -g -fPIE -pie))
$(eval $(call sym_target,target-nopie,-O0 -g -fno-pie -no-pie))
$(eval $(call sym_target,target-nog,-O0 -fPIE -pie))
# Compressed debug sections (as distributions ship): libdw decompresses them.
$(eval $(call sym_target,target-gz,-O0 -g -gz=zlib -fPIE -pie))
$(eval $(call sym_target,target-stripped.full,-O0 -g -fPIE -pie))
$(eval $(call sym_target,target-dbglink.full,-O0 -g -fPIE -pie))
$(eval $(call sym_target,target-buildid.full,-O0 -g -fPIE -pie))
$(eval $(call sym_target,target-dinfod.full,-O0 -g -fPIE -pie))
# No build-id: its debug file is found by .gnu_debuglink and CRC alone.
SYM_NO_BUILD_ID := -Wl,--build-id=none
$(eval $(call sym_target,target-nobid.full,-O0 -g -fPIE -pie $(SYM_NO_BUILD_ID)))
$(eval $(call sym_target,target-badlink.full,-O0 -g -fPIE -pie))

$(SYM_T)/target-stripped: $(SYM_T)/target-stripped.full
	$(Q)strip --strip-all -o $@ $<

# Debug info only in target-dbglink.debug, found through .gnu_debuglink.
$(SYM_T)/target-dbglink: $(SYM_T)/target-dbglink.full
	$(Q)cd $(SYM_T) && objcopy --only-keep-debug target-dbglink.full target-dbglink.debug && \
		objcopy --strip-all --add-gnu-debuglink=target-dbglink.debug \
			target-dbglink.full target-dbglink

$(SYM_T)/target-nobid: $(SYM_T)/target-nobid.full
	$(Q)cd $(SYM_T) && objcopy --only-keep-debug target-nobid.full target-nobid.debug && \
		objcopy --strip-all --add-gnu-debuglink=target-nobid.debug \
			target-nobid.full target-nobid

# A .gnu_debuglink naming "../../etc/shadow" (objcopy would keep only a
# base name): the section written by hand, name, NUL padding to 4, CRC.
$(SYM_T)/target-badlink: $(SYM_T)/target-badlink.full
	$(Q)printf '../../etc/shadow\0\0\0\0\1\2\3\4' >$(SYM_T)/badlink.section && \
		objcopy --strip-all --add-section .gnu_debuglink=$(SYM_T)/badlink.section \
			$< $@

# Debug info only in debugroot/.build-id/xx/yyyy.debug (no debuglink).
$(SYM_T)/target-buildid: $(SYM_T)/target-buildid.full
	$(Q)id=$$(readelf -n $< | awk '/Build ID:/ {print $$3}'); \
		test -n "$$id" && mkdir -p $(SYM_T)/debugroot/.build-id/$${id:0:2} && \
		objcopy --only-keep-debug $< $(SYM_T)/debugroot/.build-id/$${id:0:2}/$${id:2}.debug && \
		strip --strip-all -o $@ $<

# Debug info only from a debuginfod server (the suite serves dinfod/).
$(SYM_T)/target-dinfod: $(SYM_T)/target-dinfod.full
	$(Q)mkdir -p $(SYM_T)/dinfod && \
		objcopy --only-keep-debug $< $(SYM_T)/dinfod/target-dinfod.debug && \
		strip --strip-all -o $@ $<

$(SYM_T)/cxx: $(SYM_S)/cxx.cc
	@echo "  CXX     $@"
	$(Q)mkdir -p $(SYM_T)
	$(Q)g++ -O1 -g -Wall -Wextra -Wl,--build-id -o $@ $<

# Go binaries without symbol tables (suite 11; needs `go`, Debian's
# golang-go): selftests/agent/sym/gowork built with DWARF and .symtab,
# stripped of both afterwards (same addresses), and as containers ship it
# (-trimpath -ldflags='-s -w'), also as a PIE; sym_go compares them.
SYM_GO := $(SYM_T)/go
SYM_GO_SRC := $(SYM_S)/gowork/main.go $(SYM_S)/gowork/go.mod
SYM_GO_ENV := GOCACHE=$(abspath $(SYM_GO))/cache GOFLAGS= GO111MODULE=on GOTOOLCHAIN=local
.PHONY: sym-go
sym-go: $(SYM_GO)/sym_go $(SYM_GO)/gowork $(SYM_GO)/gowork-strip \
	$(SYM_GO)/gowork-stripped $(SYM_GO)/gowork-pie $(SYM_GO)/gowork.nm \
	$(SYM_GO)/layouts/main-118 $(SYM_GO)/gowork-noshdr $(SYM_GO)/gowork-extpie

$(SYM_GO)/sym_go: $(SYM_S)/sym_go.c $(SYM_OBJS) agent/symbolize/symbolize_internal.h \
		$(SYM_S)/sym_check.h
	@echo "  CC      $@"
	$(Q)mkdir -p $(SYM_GO)
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $< $(SYM_OBJS) $(SYM_LIBS)

$(SYM_GO)/gowork: $(SYM_GO_SRC)
	@echo "  GO      $@"
	$(Q)mkdir -p $(SYM_GO)
	$(Q)cd $(SYM_S)/gowork && $(SYM_GO_ENV) go build -o $(abspath $@) .

$(SYM_GO)/gowork-strip: $(SYM_GO)/gowork
	$(Q)strip --strip-all -o $@ $<

$(SYM_GO)/gowork.nm: $(SYM_GO)/gowork
	$(Q)cd $(SYM_S)/gowork && $(SYM_GO_ENV) go tool nm -n $(abspath $<) >$(abspath $@)

$(SYM_GO)/gowork-stripped: $(SYM_GO_SRC)
	@echo "  GO      $@"
	$(Q)mkdir -p $(SYM_GO)
	$(Q)cd $(SYM_S)/gowork && $(SYM_GO_ENV) go build -trimpath -ldflags='-s -w' -o $(abspath $@) .

$(SYM_GO)/gowork-pie: $(SYM_GO_SRC)
	@echo "  GO      $@"
	$(Q)mkdir -p $(SYM_GO)
	$(Q)cd $(SYM_S)/gowork && $(SYM_GO_ENV) go build -buildmode=pie -trimpath \
		-ldflags='-s -w' -o $(abspath $@) .

# The other table layouts (Go 1.2, 1.16, 1.20), made from this Go's 1.18
# one: main.* and 60 runtime functions from runtime.schedule. A Go that
# makes another layout leaves layouts/none (sym_go skips the check).
$(SYM_GO)/layouts/main-118: $(SYM_GO)/gowork-stripped selftests/fuzz/gopcln_seed.py
	$(Q)rm -rf $(@D) && mkdir -p $(@D)
	$(Q)for l in 12 116 118 120; do \
		python3 selftests/fuzz/gopcln_seed.py $< $(@D)/main-$$l main.hashLoop 20 $$l >$(@D)/log; \
		rc=$$?; if [ $$rc = 3 ]; then cp $(@D)/log $(@D)/none; touch $@; exit 0; fi; \
		[ $$rc = 0 ] && python3 selftests/fuzz/gopcln_seed.py $< $(@D)/runtime-$$l \
			runtime.schedule 60 $$l >$(@D)/log || exit 1; \
	done

# No section headers at all (as sstrip leaves a file): the table is found
# by its header in a read-only segment of a file with a Go build-id note.
$(SYM_GO)/gowork-noshdr: $(SYM_GO)/gowork-stripped
	$(Q)python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); \
		d[0x28:0x30] = bytes(8); d[0x3c:0x40] = bytes(4); \
		open(sys.argv[2], "wb").write(d)' $< $@ && chmod +x $@

# cgo's way: linked by the system linker as a PIE, the table has no
# section of its own (it is inside .data.rel.ro): found by its header.
$(SYM_GO)/gowork-extpie: $(SYM_GO_SRC)
	@echo "  GO      $@"
	$(Q)mkdir -p $(SYM_GO) && rm -f $@
	$(Q)cd $(SYM_S)/gowork && $(SYM_GO_ENV) CGO_ENABLED=1 go build -buildmode=pie -trimpath \
		-ldflags='-s -w -linkmode=external' -o $(abspath $@) . 2>&1 | \
		grep -v -e '^# gowork' -e 'loadinternal: cannot find runtime/cgo' || true
	$(Q)test -x $@
