# OTLP test drivers (selftests/otlp/*.c), linked with just the objects they
# exercise so they build even while unrelated agent code is in flux.
OTLP_PB_OBJS := $(filter agent/gen/opentelemetry/%,$(AGENT_GEN_C:.c=.o))
OTLP_TEST_BINS := agent/gen/tests/otlp_fixture agent/gen/tests/otlp_send

ALL_TARGETS += $(OTLP_TEST_BINS)

agent/gen/tests/otlp_fixture: selftests/otlp/otlp_fixture.c agent/output_otlp.o \
		agent/otlp_intern.o agent/hash_index.o agent/container.o \
		agent/safe_file.o $(OTLP_PB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $^ $(AGENT_LDLIBS)

agent/gen/tests/otlp_send: selftests/otlp/otlp_send.c agent/otlp_export.o \
		$(OTLP_PB_OBJS)
	@echo "  CC      $@"
	$(Q)mkdir -p agent/gen/tests
	$(Q)$(CC) $(AGENT_CFLAGS) -o $@ $^ $(AGENT_LDLIBS) -lpthread
