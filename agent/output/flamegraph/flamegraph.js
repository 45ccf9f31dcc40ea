/*
 * ember flame graph behaviour, embedded into every SVG by
 * agent/mk/flamegraph.mk. Plain ES5 on the SVG DOM, no network, no libraries.
 *
 * Click a box to zoom into it (its ancestors stay, faded), click the root,
 * "Reset Zoom" or press Escape to zoom out. "Search" (or Ctrl-F) highlights
 * the boxes whose name matches a regular expression (a plain substring when
 * the text is not a valid regular expression) and shows the share of the
 * total they cover, counting nested matches once; "ic" toggles ignore-case.
 *
 * Test hook: a URL fragment such as #search=REGEX&zoom=NAME&snap=a&reset&ic
 * runs those steps in order at load. snap=NAME records the state then in
 * attributes of the root element: data-NAME-matched (search coverage, %),
 * data-NAME-visible (boxes shown), data-NAME-zoom-width (the zoomed box's
 * width); the final state goes to data-matched, data-visible and
 * data-zoom-width. data-ember-ready="1" is set once everything ran without
 * error (an error lands in data-ember-error instead).
 */
"use strict";
(function () {
	var svg = document.documentElement;

	window.addEventListener("error", function (e) {
		svg.setAttribute("data-ember-error", String(e.message));
	});

	var CHAR_WIDTH = 7.22; /* must match output_svg.c */
	var EPS = 0.02; /* positions are written with 2 decimals */
	var xpad = Number(svg.getAttribute("data-xpad"));
	var width = Number(svg.getAttribute("width")) - 2 * xpad;
	var total = Number(svg.getAttribute("data-total"));
	var byId = function (id) { return document.getElementById(id); };
	var details = byId("details");
	var matchedText = byId("matched");
	var unzoomButton = byId("unzoom");
	var searchButton = byId("search");
	var icButton = byId("ignorecase");

	var frames = [];
	var nodes = byId("frames").children;
	for (var i = 0; i < nodes.length; i++) {
		var g = nodes[i];
		var title = g.getElementsByTagName("title")[0].textContent;
		var nl = title.indexOf("\n");
		var rect = g.getElementsByTagName("rect")[0];
		var f = {
			g: g,
			rect: rect,
			text: g.getElementsByTagName("text")[0],
			name: nl < 0 ? title : title.slice(0, nl),
			info: nl < 0 ? "" : title.slice(nl + 1),
			x: Number(rect.getAttribute("x")),
			w: Number(rect.getAttribute("width")),
			y: Number(rect.getAttribute("y")),
			value: 0
		};
		/* the box's share of the total, from its width: exact enough to 0.01% */
		f.value = width > 0 ? f.w / width * total : 0;
		g.emberIndex = i;
		frames.push(f);
	}

	function fitText(f, x, w) {
		var n = Math.floor((w - 6) / CHAR_WIDTH);
		var chars = Array.from(f.name);
		f.text.setAttribute("x", (x + 3).toFixed(2));
		if (n < 3)
			f.text.textContent = "";
		else if (chars.length <= n)
			f.text.textContent = f.name;
		else
			f.text.textContent = chars.slice(0, n - 2).join("") + "..";
	}

	function place(f, x, w) {
		f.rect.setAttribute("x", x.toFixed(2));
		f.rect.setAttribute("width", w.toFixed(2));
		fitText(f, x, w);
	}

	var zoomed = null;

	function resetZoom() {
		zoomed = null;
		frames.forEach(function (f) {
			f.g.classList.remove("hide", "parent");
			place(f, f.x, f.w);
		});
		unzoomButton.classList.add("hide");
		svg.removeAttribute("data-zoomed");
	}

	/* Boxes are laid out as a tree: geometry alone tells ancestry. */
	function zoom(z) {
		if (z.y === frames[0].y || z.w <= 0) {
			resetZoom();
			return;
		}
		zoomed = z;
		var ratio = width / z.w;
		frames.forEach(function (f) {
			var g = f.g;
			if (f.y > z.y) {
				/* lower row: an ancestor when it covers z */
				if (f.x <= z.x + EPS && f.x + f.w >= z.x + z.w - EPS) {
					g.classList.remove("hide");
					g.classList.add("parent");
					place(f, xpad, width);
				} else {
					g.classList.add("hide");
				}
			} else if (f.x >= z.x - EPS && f.x + f.w <= z.x + z.w + EPS) {
				g.classList.remove("hide", "parent");
				place(f, xpad + (f.x - z.x) * ratio, f.w * ratio);
			} else {
				g.classList.add("hide");
			}
		});
		unzoomButton.classList.remove("hide");
		svg.setAttribute("data-zoomed", z.name);
	}

	var searchTerm = "";
	var ignoreCase = false;

	/* Highlight matches; return the share of the total they cover, in %. */
	function search(term) {
		searchTerm = term || "";
		var hits = [];
		var re = null;
		var needle = ignoreCase ? searchTerm.toLowerCase() : searchTerm;
		try {
			re = new RegExp(searchTerm, ignoreCase ? "i" : "");
		} catch (e) {
			re = null; /* not a regular expression: a substring */
		}
		frames.forEach(function (f) {
			var hit = searchTerm !== "" && (re ? re.test(f.name) :
				(ignoreCase ? f.name.toLowerCase() : f.name).indexOf(needle) >= 0);
			f.g.classList.toggle("hl", hit);
			if (hit)
				hits.push(f);
		});
		if (searchTerm === "") {
			matchedText.textContent = " ";
			searchButton.classList.remove("on");
			svg.removeAttribute("data-matched");
			return 0;
		}
		/* ancestors first (left to right, lower rows first); skip nested hits */
		hits.sort(function (a, b) { return a.x - b.x || b.y - a.y; });
		var covered = 0, end = -Infinity;
		hits.forEach(function (f) {
			if (f.x + f.w <= end + EPS)
				return;
			covered += f.value;
			end = f.x + f.w;
		});
		var pct = total > 0 ? 100 * covered / total : 0;
		matchedText.textContent = "Matched: " + pct.toFixed(1) + "% (" + hits.length + " boxes)";
		searchButton.classList.add("on");
		svg.setAttribute("data-matched", pct.toFixed(2));
		return pct;
	}

	function askSearch() {
		if (searchTerm !== "") {
			search("");
			return;
		}
		var term = window.prompt("Search frames (regular expression or substring):", "");
		if (term)
			search(term);
	}

	function frameOf(target) {
		while (target && target !== svg) {
			if (target.emberIndex !== undefined)
				return frames[target.emberIndex];
			target = target.parentNode;
		}
		return null;
	}

	byId("frames").addEventListener("click", function (e) {
		var f = frameOf(e.target);
		if (f)
			zoom(f);
	});
	byId("frames").addEventListener("mouseover", function (e) {
		var f = frameOf(e.target);
		if (f)
			details.textContent = f.name + " (" + f.info + ")";
	});
	byId("frames").addEventListener("mouseout", function () {
		details.textContent = " ";
	});
	unzoomButton.addEventListener("click", resetZoom);
	searchButton.addEventListener("click", askSearch);
	icButton.addEventListener("click", function () {
		ignoreCase = !ignoreCase;
		icButton.classList.toggle("on", ignoreCase);
		if (searchTerm !== "")
			search(searchTerm);
	});
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey && e.key === "f") || e.key === "F3") {
			e.preventDefault();
			askSearch();
		} else if (e.key === "Escape") {
			resetZoom();
			search("");
		}
	});

	/* What the test hook reports: "matched visible zoom-width". */
	function state() {
		var visible = frames.filter(function (f) {
			return !f.g.classList.contains("hide");
		}).length;
		return {
			matched: svg.getAttribute("data-matched") || "",
			visible: String(visible),
			"zoom-width": zoomed ? zoomed.rect.getAttribute("width") : ""
		};
	}

	/* Test hook: #search=...&zoom=...&reset&ic&snap=NAME (see the header). */
	function runFragment(hash) {
		hash.replace(/^#/, "").split("&").forEach(function (part) {
			if (part === "")
				return;
			var eq = part.indexOf("=");
			var key = eq < 0 ? part : part.slice(0, eq);
			var arg = eq < 0 ? "" : decodeURIComponent(part.slice(eq + 1));
			if (key === "ic") {
				ignoreCase = true;
			} else if (key === "noic") {
				ignoreCase = false;
			} else if (key === "search") {
				search(arg);
			} else if (key === "zoom") {
				var z = frames.filter(function (f) { return f.name === arg; })[0];
				if (!z)
					throw new Error("zoom: no frame named " + arg);
				zoom(z);
			} else if (key === "reset") {
				resetZoom();
			} else if (key === "snap" && /^[a-z0-9-]+$/.test(arg)) {
				var st = state();
				Object.keys(st).forEach(function (k) {
					svg.setAttribute("data-" + arg + "-" + k, st[k]);
				});
			} else {
				throw new Error("test hook: unknown step " + part);
			}
		});
		var st = state();
		Object.keys(st).forEach(function (k) {
			svg.setAttribute("data-" + k, st[k]);
		});
	}

	window.emberFlameGraph = { search: search, zoom: zoom, reset: resetZoom, frames: frames };
	try {
		runFragment(window.location.hash || "");
	} catch (e) {
		/* a bad fragment must not break the graph: report it quietly */
		svg.setAttribute("data-ember-error", String(e.message));
	}
	/*
	 * A graph taller than the window opens at its root (the bottom row),
	 * not at the header above the leaves: deep stacks put the root far
	 * out of view. data-root-visible says whether it is in view now.
	 */
	var root = frames.filter(function (f) { return f.name === "all"; })[0];
	if (!window.location.hash && root && window.innerHeight > 0 &&
	    svg.getBoundingClientRect().height > window.innerHeight + 1)
		root.rect.scrollIntoView({ block: "end" });
	if (root) {
		var r = root.rect.getBoundingClientRect();

		svg.setAttribute("data-root-visible",
				 r.top >= 0 && r.bottom <= window.innerHeight + 1 ? "1" : "0");
	}
	svg.setAttribute("data-ember-ready", "1");
})();
