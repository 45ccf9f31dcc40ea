# OTLP test drivers (selftests/otlp/*.c), linked with just the objects they
# exercise so they build even while unrelated agent code is in flux.
OTLP_PB_OBJS := $(filter agent/gen/opentelemetry/%,$(AGENT_GEN_C:.c=.o))
OTLP_TEST_BINS := agent/gen/tests/otlp_fixture agent/gen/tests/otlp_send \
	agent/gen/tests/otlp_send_oldcurl

# (not in an EMBER_OTLP=none build: they test the libcurl exporter)
ifeq ($(EMBER_OTLP),curl)
ALL_TARGETS += $(OTLP_TEST_BINS)
endif

agent/gen/tests/otlp_fixture: selftests/otlp/otlp_fixture.c agent/output/output_otlp.o \
		agent/output/otlp_intern.o agent/lib/hash_index.o agent/proc/container.o \
		agent/lib/safe_file.o $(OTLP_PB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $^ $(AGENT_LDLIBS)

agent/gen/tests/otlp_send: selftests/otlp/otlp_send.c agent/export/otlp_export.o \
		$(OTLP_PB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $^ $(AGENT_LDLIBS) -lpthread

# The same driver with the exporter's old-libcurl branches forced
# (EMBER_FORCE_OLD_CURL: CURLOPT_PROTOCOLS, Retry-After parsed from the
# headers), so 50-otlp.sh proves them on a new libcurl too.
agent/gen/tests/otlp_send_oldcurl: selftests/otlp/otlp_send.c agent/export/otlp_export.c \
		agent/export/otlp_export.h $(OTLP_PB_OBJS) | $(AGENT_GEN_H)
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) $(AGENT_CFLAGS) -DEMBER_FORCE_OLD_CURL -o $@ $(filter %.c %.o,$^) \
		$(AGENT_LDLIBS) -lpthread
