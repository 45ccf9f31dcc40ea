# agent/mk/flamegraph.mk: embed the flame graph's JS and CSS into the agent.
# agent/output/flamegraph/*.js|*.css stay real files; embed.sh turns them into
# agent/gen/flamegraph_assets.c, which output/output_svg.c writes into every SVG.

FLAMEGRAPH_ASSETS := agent/output/flamegraph/flamegraph.js agent/output/flamegraph/flamegraph.css
FLAMEGRAPH_GEN_C := agent/gen/flamegraph_assets.c
FLAMEGRAPH_GEN_O := agent/gen/flamegraph_assets.o

AGENT_OBJS += $(FLAMEGRAPH_GEN_O)
AGENT_LIB_OBJS += $(FLAMEGRAPH_GEN_O)

$(FLAMEGRAPH_GEN_C): $(FLAMEGRAPH_ASSETS) agent/output/flamegraph/embed.sh
	@echo "  EMBED   $@"
	$(Q)mkdir -p agent/gen
	$(Q)agent/output/flamegraph/embed.sh $@ \
		ember_flamegraph_js=agent/output/flamegraph/flamegraph.js \
		ember_flamegraph_css=agent/output/flamegraph/flamegraph.css

$(FLAMEGRAPH_GEN_O): $(FLAMEGRAPH_GEN_C) agent/output/flamegraph/assets.h
	@echo "  CC      $@"
	$(Q)$(CC) $(AGENT_CFLAGS) -c -o $@ $<
