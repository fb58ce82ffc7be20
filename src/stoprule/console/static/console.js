// stoprule console: live regions, sections loaded on demand, the run graph, the decision panel.
// No build step and no framework. Page content comes from the server already escaped, parsed
// with DOMParser (which runs no script) and moved into the page; graph labels are drawn as text
// on a canvas. Nothing here builds HTML from strings.
"use strict";

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
      "font-size": 10, "min-zoomed-font-size": 6, "width": 130, "height": 40, "shape": "round-rectangle",
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
      "min-zoomed-font-size": 6,
      "color": "#b42318", "text-background-color": "#fff", "text-background-opacity": 1 } },
  ];

  const DX = 170, DY = 72; // one column, one row of the drawing

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

  function nodeElement(n, tip, p) {
    const classes = [n.kind === "blocked_attempt" ? (n.retryable ? "blocked" : "terminal") : n.kind];
    if (n.id === tip) classes.push("tip");
    const attempt = n.attempt > 1 ? " #" + n.attempt : "";
    return { group: "nodes", data: { id: n.id, label: n.id + attempt + "\n" + n.verdict + "\n" + n.reason },
      classes: classes.join(" "), position: { x: p.col * DX, y: p.depth * DY } };
  }

  // Every node has its position before anything is drawn; what is drawn is the part of the run in
  // and around the view (one screen above and below), added as the view moves, and all of it for
  // "fit all". A long run thus opens on its tip at the cost of the few dozen nodes on screen.
  function drawGraph() {
    if (!graphEl || !window.cytoscape) return Promise.resolve();
    const url = graphEl.getAttribute("data-graph");
    const SMALL = 60; // a run this short is drawn whole and fitted
    let cy = null, data = null, at = null, byId = new Map(), kids = new Map();

    function index(fresh) {
      data = fresh;
      at = positions(data);
      byId = new Map(data.nodes.map((n) => [n.id, n]));
      kids = new Map();
      for (const n of data.nodes) if (n.parent != null) (kids.get(n.parent) || kids.set(n.parent, []).get(n.parent)).push(n);
      graphEl.setAttribute("data-nodes", String(data.nodes.length));
    }

    function ensure(ids) {  // draw these nodes, with their edges to nodes already drawn (or drawn now)
      const add = [], fresh = new Set();
      for (const id of ids) {
        if (fresh.has(id) || cy.hasElementWithId(id) || !byId.has(id)) continue;
        fresh.add(id);
        add.push(nodeElement(byId.get(id), data.tip, at.get(id)));
      }
      const drawn = (id) => fresh.has(id) || cy.hasElementWithId(id);
      for (const id of fresh) {
        const n = byId.get(id);
        if (n.parent != null && drawn(n.parent)) add.push(edgeElement(n));
        for (const k of kids.get(id) || []) if (!fresh.has(k.id) && drawn(k.id)) add.push(edgeElement(k));
      }
      if (add.length) cy.batch(() => cy.add(add));
      graphEl.setAttribute("data-drawn", String(cy.nodes().length));
    }

    function edgeElement(n) {
      return { group: "edges", data: { id: n.parent + ">" + n.id, source: n.parent, target: n.id }, classes: n.retry_of ? "retry" : "next" };
    }

    function inView() {  // the nodes within one screen of the view, and their parents
      const e = cy.extent(), h = e.y2 - e.y1, w = e.x2 - e.x1;
      const ids = [];
      for (const n of data.nodes) {
        const p = at.get(n.id), x = p.col * DX, y = p.depth * DY;
        if (y >= e.y1 - h && y <= e.y2 + h && x >= e.x1 - w && x <= e.x2 + w) {
          ids.push(n.id);
          if (n.parent != null) ids.push(n.parent);
        }
      }
      return ids;
    }

    function drawAll() { ensure(data.nodes.map((n) => n.id)); }

    function open() {
      cy = window.cytoscape({ container: graphEl, elements: [], style: STYLE, layout: { name: "preset" },
        minZoom: 0.002, maxZoom: 3, boxSelectionEnabled: false, autoungrabify: true });
      cy.on("tap", "node", (ev) => openDecision(ev.target.id(), true));
      window.consoleGraph = cy; // for the browser tests and the curious: the graph library's own API
      if (data.nodes.length <= SMALL) {
        drawAll();
        cy.fit(undefined, 24);
        if (cy.zoom() > 1.3) { cy.zoom(1.3); cy.center(); }
      } else {
        const p = at.get(data.tip) || at.get(data.nodes[data.nodes.length - 1].id);
        cy.zoom(1);
        cy.pan({ x: cy.width() / 2 - p.col * DX, y: cy.height() / 2 - p.depth * DY });
        ensure(inView());
        let pending = false;
        cy.on("viewport", () => {
          if (pending) return;
          pending = true;
          requestAnimationFrame(() => { pending = false; ensure(inView()); });
        });
      }
    }

    function grow(fresh) {  // a run only grows: draw what is new where it shows, move the tip
      index(fresh);
      cy.batch(() => {
        cy.nodes(".tip").removeClass("tip");
        cy.getElementById(data.tip).addClass("tip");
      });
      if (data.nodes.length <= SMALL) drawAll();
      else ensure(inView());
    }

    async function load() {
      const res = await fetch(url, { credentials: "same-origin" });
      const fresh = await res.json();
      if (cy && fresh.nodes.length !== data.nodes.length) grow(fresh);
    }

    const fit = document.getElementById("fit");
    if (fit) fit.addEventListener("click", () => {
      if (!cy) return;
      drawAll();
      cy.fit(undefined, 24);
      requestAnimationFrame(() => requestAnimationFrame(() => performance.mark("graph-all")));
    });
    graph = {
      update: () => load().catch(() => {}),
      select: (id) => { if (!cy) return; ensure([id]); cy.nodes().unselect(); cy.getElementById(id).select(); },
    };
    const embedded = document.getElementById("graph-data");  // the page carries its graph: no second request
    const ready = () => requestAnimationFrame(() => requestAnimationFrame(() => {  // painted
      performance.mark("graph-ready");
      body.setAttribute("data-graph-ready", "1");
    }));
    if (embedded) {
      index(JSON.parse(embedded.textContent));
      open();
      ready();
      return Promise.resolve();
    }
    return fetch(url, { credentials: "same-origin" }).then((r) => r.json()).then((d) => { index(d); open(); ready(); });
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
    requestAnimationFrame(() => requestAnimationFrame(() => performance.mark("page-ready")));
    body.setAttribute("data-ready", "1");
  }

  start().catch(() => body.setAttribute("data-ready", "error"));
})();
