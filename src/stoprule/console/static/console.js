// stoprule console: live regions, sections loaded on demand, the run graph, the decision panel.
// No build step and no framework. Page content comes from the server already escaped, parsed
// with DOMParser (which runs no script) and moved into the page; graph labels are drawn as text
// on a canvas. Nothing here builds HTML from strings.
"use strict";

performance.mark("console-js");
(function () {
  const body = document.body;

  function parse(html) {
    return new DOMParser().parseFromString(html, "text/html");
  }

  async function fetchDoc(url) {
    const res = await fetch(url, { credentials: "same-origin", headers: { "X-Console": "live" } });
    if (!res.ok) throw new Error(res.status + " " + url);
    return parse(await res.text());
  }

  // ---------------------------------------------------------------- live regions

  function keys(el) {
    return new Set(Array.from(el.querySelectorAll("[data-key]"), (e) => e.getAttribute("data-key")));
  }

  async function refreshLive() {
    const regions = document.querySelectorAll("[data-live]:not(body)");
    if (!regions.length) return;
    const doc = await fetchDoc(location.href);
    regions.forEach((old) => {
      const name = old.getAttribute("data-live");
      const fresh = doc.querySelector('[data-live="' + CSS.escape(name) + '"]');
      if (!fresh) return;
      const before = keys(old);
      const node = document.importNode(fresh, true);
      node.querySelectorAll("[data-key]").forEach((e) => {
        if (before.size && !before.has(e.getAttribute("data-key"))) e.classList.add("new");
      });
      old.replaceWith(node);
      wireNodeLinks(node);
    });
    if (graph) graph.update();
    document.dispatchEvent(new CustomEvent("console:refreshed"));
  }

  let refreshing = null;
  function scheduleRefresh() {
    if (refreshing) return;
    refreshing = refreshLive().catch(() => {}).finally(() => { refreshing = null; });
  }

  function startLive() {
    const live = document.getElementById("live");
    const url = body.getAttribute("data-live");
    if (!url) return;
    if (window.EventSource) {
      const es = new EventSource(url);
      es.addEventListener("hello", () => live && live.classList.add("on"));
      es.addEventListener("change", scheduleRefresh);
      es.onerror = () => live && live.classList.remove("on");
      es.onopen = () => live && live.classList.add("on");
      return;
    }
    let last = null; // no EventSource: poll the version
    setInterval(async () => {
      try {
        const res = await fetch(body.getAttribute("data-version"), { credentials: "same-origin" });
        const v = (await res.json()).version;
        if (last !== null && v !== last) scheduleRefresh();
        last = v;
        live && live.classList.add("on");
      } catch (e) {
        live && live.classList.remove("on");
      }
    }, 2000);
  }

  // ---------------------------------------------------------------- sections loaded on demand

  function loadSections(root) {
    return Promise.all(Array.from((root || document).querySelectorAll("[data-load]"), async (el) => {
      try {
        const doc = await fetchDoc(el.getAttribute("data-load"));
        const fresh = doc.body.firstElementChild;
        el.removeAttribute("data-load");
        if (fresh) el.replaceChildren(...Array.from(fresh.childNodes, (n) => document.importNode(n, true)));
        await loadSections(el); // a loaded section may hold sections of its own
      } catch (e) {
        const p = document.createElement("p");
        p.className = "bad";
        p.textContent = "Could not load this section (" + e.message + ").";
        el.append(p);
      }
    }));
  }

  // ---------------------------------------------------------------- the decision panel

  const panel = document.getElementById("decision");
  const graphEl = document.getElementById("graph");

  async function openDecision(node, push) {
    if (!panel || !graphEl) return false;
    const url = graphEl.getAttribute("data-decision") + "?run=" + encodeURIComponent(graphEl.getAttribute("data-run")) +
      "&node=" + encodeURIComponent(node) + "&fragment=1";
    const doc = await fetchDoc(url);
    const section = doc.querySelector("section.decision-body");
    if (!section) return false;
    panel.replaceChildren(document.importNode(section, true));
    wireNodeLinks(panel);
    if (push) history.replaceState(null, "", "#" + encodeURIComponent(node));
    if (graph) graph.select(node);
    if (window.matchMedia("(max-width: 999px)").matches) panel.scrollIntoView({ behavior: "smooth", block: "start" });
    return true;
  }

  function wireNodeLinks(root) {
    if (!panel || !graphEl) return;
    root.querySelectorAll("a[data-node]").forEach((a) => {
      a.addEventListener("click", (ev) => {
        if (ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
        ev.preventDefault();
        openDecision(a.getAttribute("data-node"), true).catch(() => { location.href = a.href; });
      });
    });
  }

  // ---------------------------------------------------------------- the run graph

  let graph = null;

  const STYLE = [
    { selector: "node", style: {
      "label": "data(label)", "text-wrap": "wrap", "text-valign": "center", "text-halign": "center",
      "font-size": 10, "width": 130, "height": 40, "shape": "round-rectangle",
      "background-color": "#e6f4ea", "border-width": 2, "border-color": "#1a7f37", "color": "#1d2330" } },
    { selector: "node.checkpoint", style: { "shape": "barrel", "background-color": "#e8f1ff", "border-color": "#2e5aac" } },
    { selector: "node.blocked", style: { "shape": "hexagon", "background-color": "#fde2e1", "border-color": "#b42318" } },
    { selector: "node.terminal", style: { "shape": "hexagon", "background-color": "#f5b7b1", "border-color": "#7a1f14", "border-width": 3 } },
    { selector: "node.tip", style: { "border-style": "double", "border-width": 5 } },
    { selector: "node:selected", style: { "overlay-color": "#2e5aac", "overlay-opacity": 0.18, "overlay-padding": 5 } },
    // plain edges as straight "haystack" lines (the graph runs top-down); retry edges dashed, with an arrow
    { selector: "edge", style: { "width": 2, "line-color": "#98a2b3", "curve-style": "haystack", "haystack-radius": 0 } },
    { selector: "edge.retry", style: { "curve-style": "bezier", "line-style": "dashed", "line-color": "#b42318",
      "target-arrow-color": "#b42318", "target-arrow-shape": "triangle", "label": "retry", "font-size": 8,
      "color": "#b42318", "text-background-color": "#fff", "text-background-opacity": 1 } },
  ];

  function elements(data, at) {
    const out = [];
    for (const n of data.nodes) {
      const p = at.get(n.id);
      const classes = [n.kind === "blocked_attempt" ? (n.retryable ? "blocked" : "terminal") : n.kind];
      if (n.id === data.tip) classes.push("tip");
      const attempt = n.attempt > 1 ? " #" + n.attempt : "";
      out.push({ group: "nodes", data: { id: n.id, label: n.id + attempt + "\n" + n.verdict + "\n" + n.reason },
        classes: classes.join(" "), position: { x: p.col * 170, y: p.depth * 72 } });
    }
    for (const e of data.edges) {
      out.push({ group: "edges", data: { id: e.from + ">" + e.to, source: e.from, target: e.to }, classes: e.kind });
    }
    return out;
  }

  // A run's DAG is a tree (each node has one parent): drawn top-down in append order, a chain in
  // one column, each further child of a node in a column of its own. Positions are computed here
  // in one pass (the library's own layouts measure every label first: slow at 1,000 nodes).
  function positions(data) {
    const at = new Map();
    const used = new Set();
    let columns = 0;
    for (const n of data.nodes) {
      const parent = n.parent == null ? null : at.get(n.parent);
      let col;
      if (!parent) col = columns++;
      else if (!used.has(n.parent)) { col = parent.col; used.add(n.parent); }
      else col = columns++;
      at.set(n.id, { col: col, depth: parent ? parent.depth + 1 : 0 });
    }
    return at;
  }

  function drawGraph() {
    if (!graphEl || !window.cytoscape) return Promise.resolve();
    const url = graphEl.getAttribute("data-graph");
    let cy = null;
    let count = -1;

    function focus(data) {
      if (data.nodes.length <= 60) { cy.fit(undefined, 24); if (cy.zoom() > 1.3) cy.zoom(1.3); cy.center(); return; }
      const tip = cy.getElementById(data.tip);
      cy.zoom(1);
      cy.center(tip.length ? tip : cy.nodes().last());
    }

    // A long run is drawn in two steps: the nodes nearest its tip (what the view opens on) at once,
    // the rest in slices right after, so the page is usable before a 1,000-node graph is complete.
    const FIRST = 120;
    const SLICE = 250;

    function split(data, els) {
      const near = new Set(data.nodes.slice(Math.max(0, data.nodes.length - FIRST)).map((n) => n.id));
      const now = [], nodes = [], edges = [];
      for (const e of els) {
        const inNear = e.group === "nodes" ? near.has(e.data.id) : near.has(e.data.source) && near.has(e.data.target);
        (inNear ? now : e.group === "nodes" ? nodes : edges).push(e);
      }
      return [now, nodes.concat(edges)];
    }

    function addRest(rest, done) {
      let i = 0;
      (function slice() {
        if (!cy) return;
        cy.batch(() => cy.add(rest.slice(i, i + SLICE)));
        i += SLICE;
        if (i < rest.length) setTimeout(slice, 0);
        else done();
      })();
    }

    function draw(data, first) {
      performance.mark("graph-data");
      if (data.nodes.length === count) return;
      count = data.nodes.length;
      const at = positions(data);
      const els = elements(data, at);
      performance.mark("graph-elements");
      let rest = [];
      if (!cy) {
        const parts = split(data, els);
        rest = parts[1];
        cy = window.cytoscape({ container: graphEl, elements: parts[0], style: STYLE, layout: { name: "preset" },
          minZoom: 0.05, maxZoom: 3, boxSelectionEnabled: false, autoungrabify: true });
        cy.on("tap", "node", (ev) => openDecision(ev.target.id(), true));
        window.consoleGraph = cy; // for the browser tests and the curious: the graph library's own API
      } else {  // a run only grows: add what is new, move the tip
        cy.batch(() => {
          cy.add(els.filter((e) => cy.getElementById(e.data.id).empty()));
          cy.nodes(".tip").removeClass("tip");
          cy.getElementById(data.tip).addClass("tip");
        });
      }
      performance.mark("graph-layout");
      focus(data);
      graphEl.setAttribute("data-nodes", String(count));
      const complete = () => { graphEl.setAttribute("data-drawn", String(cy.nodes().length)); };
      if (first) {
        requestAnimationFrame(() => requestAnimationFrame(() => {
          body.setAttribute("data-graph-ready", "1");
          addRest(rest, () => requestAnimationFrame(() => { complete(); body.setAttribute("data-graph-complete", "1"); }));
        }));
      } else {
        complete();
      }
    }

    async function load() {
      const res = await fetch(url, { credentials: "same-origin" });
      draw(await res.json(), false);
    }

    const fit = document.getElementById("fit");
    if (fit) fit.addEventListener("click", () => cy && cy.fit(undefined, 24));
    graph = {
      update: () => load().catch(() => {}),
      select: (id) => { if (!cy) return; cy.nodes().unselect(); cy.getElementById(id).select(); },
    };
    const embedded = document.getElementById("graph-data");  // the page carries its graph: no second request
    if (embedded) { draw(JSON.parse(embedded.textContent), true); return Promise.resolve(); }
    return load().then(() => requestAnimationFrame(() => {
      body.setAttribute("data-graph-ready", "1");
      body.setAttribute("data-graph-complete", "1");
    }));
  }

  // ---------------------------------------------------------------- start

  async function start() {
    wireNodeLinks(document);
    startLive();
    await Promise.all([drawGraph(), loadSections()]);
    const wanted = decodeURIComponent(location.hash.slice(1));
    if (wanted) await openDecision(wanted, false).catch(() => {});
    window.addEventListener("hashchange", () => {
      const node = decodeURIComponent(location.hash.slice(1));
      if (node) openDecision(node, false).catch(() => {});
    });
    body.setAttribute("data-ready", "1");
  }

  start().catch(() => body.setAttribute("data-ready", "error"));
})();
