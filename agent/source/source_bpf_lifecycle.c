	bpf_program__set_autoload(skel->progs.ember_exec_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exec_raw, life && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_raw, life && s->raw_tp);

	if (cfg->events & EMBER_EV_LIFECYCLE) {
		ret = attach_tp(s, 0, k->progs.ember_exec_btf, k->progs.ember_exec_raw);
		if (!ret)
			ret = attach_tp(s, 1, k->progs.ember_exit_btf, k->progs.ember_exit_raw);
		if (ret)
			goto fail;
	}
