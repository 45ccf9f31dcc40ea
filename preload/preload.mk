# preload/preload.mk: libember-alloc.so, the in-process allocation sampler
# that `ember record -e alloc -- CMD` preloads (preload/ember_alloc.c).
PRELOAD_LIB := preload/libember-alloc.so
PRELOAD_CFLAGS := -std=gnu11 -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra \
	-fno-builtin-malloc -fno-builtin-free $(EXTRA_CFLAGS)

ALL_TARGETS += $(PRELOAD_LIB)
# the packages ship it with the agent (packaging/install.sh)
agent: $(PRELOAD_LIB)
CLEAN_FILES += $(PRELOAD_LIB) agent/gen/tests/alloc-sampler-test \
	agent/gen/tests/allocwork agent/gen/tests/semwatch \
	agent/gen/tests/allocwork-static agent/gen/tests/allocwork-own \
	agent/gen/tests/allocwork-cxx

$(PRELOAD_LIB): preload/ember_alloc.c
	@echo "  CC      $@"
	$(Q)$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -o $@ $< -lm -ldl

# The sampler's own test defines the probe functions itself: -rdynamic so
# the library's calls through its PLT reach them.
agent/gen/tests/alloc-sampler-test: selftests/alloc/alloc_sampler_test.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fno-builtin -rdynamic -o $@ $< -ldl -lpthread

.PHONY: alloc-sampler
alloc-sampler: $(PRELOAD_LIB) agent/gen/tests/alloc-sampler-test

# -e alloc's ground truth (selftests/alloc/check-alloc.sh): built the way
# distributions build, without frame pointers.
agent/gen/tests/allocwork: selftests/alloc/allocwork.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -o $@ $<

# the same, static: no libc to probe, the executable is the allocator
agent/gen/tests/allocwork-static: selftests/alloc/allocwork.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -static -o $@ $<

# the same with its own allocator in the executable (never libc's)
agent/gen/tests/allocwork-own: selftests/alloc/allocwork.c selftests/alloc/ownalloc.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fno-builtin -o $@ $^

# C++'s operator new beside malloc (jemalloc and tcmalloc define both)
agent/gen/tests/allocwork-cxx: selftests/alloc/allocwork-cxx.cc
	@echo "  CXX     $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=c++17 -O2 -g -fomit-frame-pointer -o $@ $<

agent/gen/tests/semwatch: selftests/alloc/semwatch.c
	@echo "  CC      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -o $@ $< -ldl

.PHONY: alloc-work
alloc-work: $(PRELOAD_LIB) agent/gen/tests/allocwork agent/gen/tests/semwatch \
	agent/gen/tests/allocwork-static agent/gen/tests/allocwork-own \
	agent/gen/tests/allocwork-cxx
