#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
//
// Read ember's pprof output back with an independent decoder (the
// pprof-format npm package, Datadog's) and compare it with the profile it
// was written from.
//
// usage: NODE_PATH=.../node_modules check_pprof.js DIR FIXTURE...
//
// DIR/FIXTURE.pb.gz against DIR/FIXTURE.expected.json (written by
// output-fixtures). Prints one PASS/FAIL line per check.
"use strict";
const fs = require("fs");
const zlib = require("zlib");
const { Profile } = require("pprof-format");

let failures = 0;
function report(ok, name, why) {
	if (ok) {
		console.log(`PASS: ${name}`);
	} else {
		failures++;
		console.log(`FAIL: ${name}: ${why || "failed"}`);
	}
}

const CPU = 1, OFF = 2;
const num = (v) => Number(v); // pprof-format yields number or bigint

function check(dir, fixture) {
	const exp = JSON.parse(fs.readFileSync(`${dir}/${fixture}.expected.json`, "utf8"));
	const gz = fs.readFileSync(`${dir}/${fixture}.pb.gz`);
	report(gz[0] === 0x1f && gz[1] === 0x8b, `pprof ${fixture}: gzip-compressed`, "no gzip magic");
	let p;
	try {
		p = Profile.decode(zlib.gunzipSync(gz));
	} catch (e) {
		report(false, `pprof ${fixture}: decodes`, String(e));
		return;
	}
	report(true, `pprof ${fixture}: decodes with pprof-format`);
	const str = p.stringTable.strings;
	const s = (i) => str[num(i)];
	report(str[0] === "", `pprof ${fixture}: string_table[0] is ""`, JSON.stringify(str[0]));

	// sample types per event, period, default
	const types = p.sampleType.map((t) => `${s(t.type)}/${s(t.unit)}`);
	const want = [];
	if (exp.events & CPU || !(exp.events & OFF))
		want.push("samples/count", "cpu/nanoseconds");
	if (exp.events & OFF)
		want.push("off_cpu/nanoseconds");
	report(JSON.stringify(types) === JSON.stringify(want),
		`pprof ${fixture}: sample_type ${want.join(",")}`, JSON.stringify(types));
	const periodOk = exp.events & CPU ?
		s(p.periodType.type) === "cpu" && s(p.periodType.unit) === "nanoseconds" &&
			num(p.period) === exp.period_ns :
		s(p.periodType.type) === "off_cpu" && num(p.period) === 1;
	report(periodOk, `pprof ${fixture}: period_type and period`,
		`${s(p.periodType.type)}/${s(p.periodType.unit)} ${p.period}`);
	report(s(p.defaultSampleType) === (exp.events & CPU ? "cpu" : "off_cpu"),
		`pprof ${fixture}: default_sample_type`, s(p.defaultSampleType));
	report(BigInt(p.timeNanos) === BigInt(exp.start_ns) &&
		num(p.durationNanos) === exp.end_ns - exp.start_ns,
		`pprof ${fixture}: time_nanos and duration_nanos`, `${p.timeNanos} ${p.durationNanos}`);
	const comments = p.comment.map(s);
	if (exp.lost)
		report(comments.some((c) => c.includes(`this profile lost ${exp.lost} records`)),
			`pprof ${fixture}: comment says records were lost`, JSON.stringify(comments));

	// ids: unique, nonzero, references resolve
	const byId = (arr, what) => {
		const m = new Map();
		for (const e of arr) {
			const id = num(e.id);
			if (!id || m.has(id))
				report(false, `pprof ${fixture}: ${what} ids unique and nonzero`, `id ${id}`);
			m.set(id, e);
		}
		return m;
	};
	const locs = byId(p.location, "location"), funcs = byId(p.function, "function");
	const maps = byId(p.mapping, "mapping");

	// The first mapping is the one pprof readers call the profiled binary:
	// the executable of the process with the most samples (ties: the first
	// to get there).
	const byPid = new Map();
	let mainExe, best = 0;
	for (const es of exp.samples) {
		if (es.exe === undefined)
			continue;
		const c = (byPid.get(es.pid) || 0) + es.count;
		byPid.set(es.pid, c);
		if (c > best) {
			best = c;
			mainExe = es.exe;
		}
	}
	if (mainExe !== undefined && p.mapping.length > 0)
		report(s(p.mapping[0].filename) === mainExe,
			`pprof ${fixture}: first mapping is the main executable (${mainExe})`,
			s(p.mapping[0].filename));
	report(p.sample.length === exp.samples.length,
		`pprof ${fixture}: one sample per unique stack (${exp.samples.length})`,
		`${p.sample.length}`);
	const problems = [];
	const detail = exp.samples.length > 0 && exp.samples[0].frames.length > 0 &&
		exp.samples[0].frames[0].kind !== undefined;
	p.sample.forEach((ps, i) => {
		const es = exp.samples[i];
		if (!es)
			return;
		// frames, leaf first, expanding inline lines
		const names = [], lines = [];
		let nlocs = 0;
		for (const lid of ps.locationId) {
			const loc = locs.get(num(lid));
			if (!loc) {
				problems.push(`sample ${i}: no location ${lid}`);
				return;
			}
			nlocs++;
			for (const l of loc.line) {
				const fn = funcs.get(num(l.functionId));
				names.push(fn ? s(fn.name) : "?");
				lines.push({ line: num(l.line), file: fn ? s(fn.filename) : "?", loc });
			}
		}
		const want = es.frames.map((f) => f.name);
		if (JSON.stringify(names) !== JSON.stringify(want))
			problems.push(`sample ${i}: frames ${JSON.stringify(names.slice(0, 4))} != ` +
				`${JSON.stringify(want.slice(0, 4))}`);
		// values
		const vals = ps.value.map(num);
		let wantVals;
		if (exp.events & CPU && exp.events & OFF)
			wantVals = es.event === "cpu" ? [es.count, es.weight_ns, 0] : [0, 0, es.weight_ns];
		else if (exp.events & OFF)
			wantVals = [es.weight_ns];
		else
			wantVals = [es.count, es.weight_ns];
		if (JSON.stringify(vals) !== JSON.stringify(wantVals))
			problems.push(`sample ${i}: values ${vals} != ${wantVals}`);
		// labels
		const lab = {};
		for (const l of ps.label)
			lab[s(l.key)] = num(l.str) ? s(l.str) : num(l.num);
		if (lab.pid !== es.pid || lab.tid !== es.tid || lab.thread_name !== es.thread ||
		    lab.comm !== es.comm || (lab.container_id || null) !== es.container_id)
			problems.push(`sample ${i}: labels ${JSON.stringify(lab)}`);
		if (!detail)
			return;
		// one location per non-inlined frame; lines, files, mappings
		const outer = es.frames.filter((f) => !f.inlined).length;
		if (nlocs !== outer)
			problems.push(`sample ${i}: ${nlocs} locations for ${outer} non-inlined frames`);
		es.frames.forEach((f, k) => {
			const got = lines[k];
			if (!got)
				return;
			if (got.line !== f.line)
				problems.push(`sample ${i} frame ${k}: line ${got.line} != ${f.line}`);
			if (f.kind === "native" && got.file !== "src/app.c")
				problems.push(`sample ${i} frame ${k}: filename ${got.file}`);
			// a location's mapping and address are those of the frame the
			// inlined ones sit in: the next non-inlined frame
			let o = k;
			while (es.frames[o].inlined && o + 1 < es.frames.length)
				o++;
			const outerFrame = es.frames[o];
			const mid = num(got.loc.mappingId);
			if (outerFrame.module === null) {
				if (mid !== 0)
					problems.push(`sample ${i} frame ${k}: mapping ${mid} without module`);
				return;
			}
			const m = maps.get(mid);
			if (!m) {
				problems.push(`sample ${i} frame ${k}: no mapping ${mid}`);
				return;
			}
			const addr = BigInt(got.loc.address);
			if (s(m.filename) !== outerFrame.module ||
			    (s(m.buildId) || null) !== outerFrame.build_id ||
			    addr < BigInt(m.memoryStart) || addr >= BigInt(m.memoryLimit))
				problems.push(`sample ${i} frame ${k}: mapping ${s(m.filename)} ` +
					`${s(m.buildId)} [${m.memoryStart},${m.memoryLimit}) addr ${addr}`);
			if (f.inlined && !m.hasInlineFrames)
				problems.push(`sample ${i} frame ${k}: mapping ${s(m.filename)} ` +
					"has inline frames but says it has not");
			if (f.kind === "native" && !(m.hasFunctions && m.hasFilenames && m.hasLineNumbers))
				problems.push(`sample ${i} frame ${k}: mapping ${s(m.filename)} ` +
					"has functions, files and lines but says it has not");
			if (BigInt(outerFrame.address) !== addr)
				problems.push(`sample ${i} frame ${k}: address ${addr} != ${f.address}`);
		});
	});
	report(problems.length === 0,
		`pprof ${fixture}: samples, values, labels${detail ? ", lines and mappings" : ""} match`,
		problems.slice(0, 3).join("; "));
}

const [dir, ...fixtures] = process.argv.slice(2);
for (const f of fixtures)
	check(dir, f);
process.exit(failures ? 1 : 0);
