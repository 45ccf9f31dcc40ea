#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Check ember's SVG flame graphs against the profiles they were made from.

usage: check_svg.py DIR FIXTURE...

For each FIXTURE, DIR/FIXTURE.svg must be well-formed XML, self-contained,
and show exactly the boxes an independent reimplementation of the documented
rules expects from DIR/FIXTURE.expected.json:
  - prefix tree all -> comm -> [cpu]/[offcpu] (both events only) -> frames
    from the root down, identical names merged along a path;
  - values are sample counts with on-CPU only, else microseconds;
  - boxes under 0.1% of the total (rounded up) are not drawn;
  - widths proportional to values.
Prints one PASS/FAIL line per check.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
WIDTH = 1180.0  # image width minus both paddings
CPU, OFF = 1, 2

failures = 0


def report(ok, name, why=""):
    global failures
    if ok:
        print(f"PASS: {name}")
    else:
        failures += 1
        print(f"FAIL: {name}: {why}")


def xml_clean(s):
    """What XML can carry: control characters become U+FFFD (tab stays)."""
    return "".join("\ufffd" if (ord(c) < 0x20 and c != "\t") or c in "\x7f\ufffe\uffff"
                   else c for c in s)


def thousands(v):
    return f"{v:,}"


def value_text(v, micro):
    if micro:
        return f"{thousands((v + 500) // 1000)} us"
    return f"{thousands(v)} sample{'' if v == 1 else 's'}"


def expected_boxes(exp):
    """Multiset of (name, value) the graph must draw, and the max depth."""
    both = exp["events"] & CPU and exp["events"] & OFF
    micro = bool(exp["events"] & OFF)
    root = {"value": 0, "kids": {}}
    for s in exp["samples"]:
        v = s["weight_ns"] if micro else s["count"]
        path = [s["comm"]]
        if both:
            path.append("[offcpu]" if s["event"] == "offcpu" else "[cpu]")
        path += [f["name"] for f in reversed(s["frames"])]
        root["value"] += v
        node = root
        for name in path:
            node = node["kids"].setdefault(name, {"value": 0, "kids": {}})
            node["value"] += v
    total = root["value"]
    minv = -(-total // 1000)
    boxes = [("all", total)]
    max_depth = 0
    stack = [(k, n, 1) for k, n in root["kids"].items()]
    pruned = 0
    while stack:
        name, node, depth = stack.pop()
        if node["value"] <= 0 or node["value"] < minv:
            pruned += 1
            continue
        boxes.append((xml_clean(name), node["value"]))
        max_depth = max(max_depth, depth)
        stack += [(k, n, depth + 1) for k, n in node["kids"].items()]
    return boxes, total, micro, max_depth, pruned


def check(directory, fixture):
    path = f"{directory}/{fixture}.svg"
    with open(f"{directory}/{fixture}.expected.json", encoding="utf-8") as f:
        exp = json.load(f)
    try:
        tree = ET.parse(path)
    except ET.ParseError as e:
        report(False, f"svg {fixture}: well-formed XML", str(e))
        return
    report(True, f"svg {fixture}: well-formed XML")
    svg = tree.getroot()

    # Self-contained: no reference to anything outside the file.
    raw = open(path, encoding="utf-8").read()
    external = [m for m in re.findall(r"(?:href|src)\s*=|url\(|@import|https?://[^\"' ]*", raw)
                if m != "http://www.w3.org/2000/svg"]
    report(not external, f"svg {fixture}: self-contained (no external reference)",
           f"found {external[:3]}")
    report(svg.find(f"{NS}script") is not None and svg.find(f"{NS}style") is not None,
           f"svg {fixture}: script and style embedded", "no <script> or <style>")

    boxes, total, micro, max_depth, pruned = expected_boxes(exp)
    got = []
    width_errors = []
    for g in svg.find(f"{NS}g[@id='frames']"):
        title = g.find(f"{NS}title").text
        name, _, info = title.partition("\n")
        rect = g.find(f"{NS}rect")
        # "VALUE, PCT%[ · KIND[, inlined]]": VALUE holds no ", "
        got.append((name, info.split(", ")[0], float(rect.get("width"))))
    want = {}
    for name, v in boxes:
        want.setdefault((name, value_text(v, micro)), []).append(v)
    have = {}
    for name, vt, w in got:
        have.setdefault((name, vt), []).append(w)
    missing = [k for k in want if k not in have or len(have[k]) != len(want[k])]
    extra = [k for k in have if k not in want]
    report(not missing and not extra,
           f"svg {fixture}: boxes match the merged prefix tree ({len(boxes)} boxes)",
           f"missing {missing[:3]} extra {extra[:3]}")
    for key, ws in have.items():
        for w, v in zip(sorted(ws), sorted(want.get(key, []))):
            if total and abs(w - v / total * WIDTH) > 0.011:
                width_errors.append((key[0], w, v / total * WIDTH))
    report(not width_errors, f"svg {fixture}: widths proportional to values",
           f"{width_errors[:3]}")

    # Tooltips: value, percentage of the total, and the frame's kind.
    kinds = {}
    for smp in exp["samples"]:
        for fr in smp["frames"]:
            if "kind" in fr:
                kinds[xml_clean(fr["name"])] = (fr["kind"], fr["inlined"])
    words = {"kernel": "kernel", "native": "user", "jit": "JIT", "unknown": "unresolved"}
    bad = []
    values = {}
    for name, v in boxes:
        values.setdefault(name, set()).add(v)
    for g in svg.find(f"{NS}g[@id='frames']"):
        name, _, info = g.find(f"{NS}title").text.partition("\n")
        pct = info.split(", ")[1].split("%")[0] if ", " in info else "?"
        if total and not any(f"{100.0 * v / total:.2f}" == pct for v in values.get(name, ())):
            bad.append(f"{name}: {pct}%")
        if name in kinds:
            kind, inlined = kinds[name]
            want = f"\u00b7 {words[kind]}" + (", inlined" if inlined else "")
            if not info.endswith(want):
                bad.append(f"{name}: {info!r} (want ...{want})")
    report(not bad, f"svg {fixture}: tooltips give value, percentage and kind", f"{bad[:3]}")

    # Title: host, events, sample count; lost-record warning.
    texts = {t.get("id"): "".join(t.itertext()) for t in svg.iter(f"{NS}text") if t.get("id")}
    host = xml_clean(exp["host"])
    report(host in texts.get("title", ""), f"svg {fixture}: title names the host",
           repr(texts.get("title")))
    sub = texts.get("subtitle", "") + " / " + texts.get("note", "")
    ok = True
    if exp["events"] & CPU:
        n = sum(s["count"] for s in exp["samples"] if s["event"] == "cpu")
        ok &= f"cpu: {thousands(n)} samples" in sub
    if exp["events"] & OFF:
        n = sum(s["count"] for s in exp["samples"] if s["event"] == "offcpu")
        ok &= f"offcpu: {thousands(n)} intervals" in sub
    ok &= ("microseconds" in sub) == micro
    ok &= "UTC + 10.0 s" in sub
    report(ok, f"svg {fixture}: subtitle gives time range, events, counts and unit", repr(sub))
    if exp["lost"]:
        report(f"this profile lost {thousands(exp['lost'])} records" in texts.get("warning", ""),
               f"svg {fixture}: lost-record warning", repr(texts.get("warning")))
    else:
        report("warning" not in texts, f"svg {fixture}: no warning without losses",
               repr(texts.get("warning")))
    if pruned:
        report(f"{thousands(pruned)} boxes under 0.1% not drawn" in sub,
               f"svg {fixture}: says how many small boxes were pruned", repr(sub))
    height = int(svg.get("height"))
    report(height == 100 + (max_depth + 1) * 16 + 34,
           f"svg {fixture}: height fits the deepest drawn stack ({max_depth + 1} levels)",
           f"height {height}")
    if not exp["samples"]:
        report("empty" in texts, f"svg {fixture}: says no samples were recorded", "")


def main():
    directory = sys.argv[1]
    for fixture in sys.argv[2:]:
        check(directory, fixture)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
