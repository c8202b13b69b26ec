// report.html's dashboard: draws every chart from the one data block (dashboard.py) for the slice
// the reader picks - protocol, workload, concurrency, open-loop load and servers - so each chart
// shows one readable slice with a legend entry per server at most. Plain JS and the plotly.js
// bundled in the page; no network (the page's Content-Security-Policy forbids it anyway).
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("dashboard-data").textContent);
  const CONFIG = JSON.parse(document.getElementById("plotly-config").textContent);
  const $ = (id) => document.getElementById(id);
  const SPECTRUM_TICKS = [[1, "0 %"], [2, "50 %"], [10, "90 %"], [100, "99 %"], [1e3, "99.9 %"],
    [1e4, "99.99 %"], [1e5, "99.999 %"], [1e6, "99.9999 %"], [1e7, "99.99999 %"]];
  const PROTOCOL_NAMES = { http: "HTTP/1.1", https: "HTTP/1.1 TLS", h2c: "HTTP/2 h2c", h2: "HTTP/2 TLS", h3: "HTTP/3" };

  function fmt(value, digits) {
    return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
      .replace(/,/g, " ");
  }
  function boundPrefix(bound) {
    return bound === "lower" ? "≥ " : bound === "upper" ? "≤ " : bound === "unknown" ? "? " : "";
  }
  function protocolName(p) { return (PROTOCOL_NAMES[p] || p) + " (" + p + ")"; }

  function layout(title, ytitle, extra) {
    // "what it fixes | how to read it": the slice on the first line, the reading on a second
    const parts = title.split(" | ");
    const text = parts[0] + (parts[1] ? "<br><span style=\"font-size:11px;color:#666\">" + parts[1] + "</span>" : "");
    return Object.assign({
      title: { text: text, font: { size: 14 }, x: 0.01, xanchor: "left" },
      height: 420,
      margin: { l: 70, r: 20, t: 70, b: 60 },
      paper_bgcolor: "#fff",
      plot_bgcolor: "#fff",
      hovermode: "closest",
      legend: { font: { size: 11 } },
      xaxis: { gridcolor: "#eee", automargin: true },
      yaxis: { title: { text: ytitle }, gridcolor: "#eee", rangemode: "tozero", automargin: true },
    }, extra || {});
  }

  // -- the slice -------------------------------------------------------------------------------
  function slice() {
    return {
      p: $("pick-protocol").value,
      w: $("pick-workload").value,
      c: Number($("pick-concurrency").value),
      open: $("pick-open") ? Number($("pick-open").value) : null,
      servers: D.servers.filter((s, i) => $("pick-server-" + i).checked),
    };
  }
  function cell(t, p, w, mode, load) {
    return D.cells.find((c) => c.t === t && c.p === p && c.w === w && c.mode === mode && c.load === load);
  }
  function cellsOf(t, p, w, mode) {
    return D.cells.filter((c) => c.t === t && c.p === p && c.w === w && c.mode === mode)
      .sort((a, b) => a.load - b.load);
  }
  // what a chart says where a server has no value for the metric: n/a, FAIL or why it is left out
  function gap(c, metric) {
    if (!c || c.status === "skipped") return "n/a";
    if (c.status === "fail") return "FAIL";
    if (metric === "allocs_per_req" && c.allocs_na) return "n/a - " + c.allocs_na.split(":")[0];
    const why = (c.why[metric] || []).map((w) => w.split(" (")[0]);
    return why.length ? "excluded: " + why.join(", ") : "n/a";
  }

  // -- a chart: its plot, or a sentence saying why there is none ---------------------------------
  function show(id, traces, lay) {
    $("empty-" + id).textContent = "";
    $("plot-" + id).style.display = "";
    Plotly.react("plot-" + id, traces, lay, CONFIG);
  }
  function empty(id, why) {
    Plotly.purge("plot-" + id);
    $("plot-" + id).style.display = "none";
    $("empty-" + id).textContent = why;
  }

  // one bar per server in its colour, a row each, best first (lowerIsBetter: the cheapest first);
  // a bound hatched, written "≥ N" and dashed out to its CPU ceiling; whiskers: the repeats'
  // min-max; a log axis when the values span more than 30x (else the small bars vanish); a
  // server with no value for a plain "n/a" (not installed, or not serving this) gets no row
  const has = (v) => v !== null && v !== undefined;
  function serverBars(id, title, xtitle, servers, valueOf, digits, lowerIsBetter) {
    const rows = servers.map((s) => Object.assign({ s: s }, valueOf(s)))
      .filter((r) => has(r.value) || (r.gap && r.gap !== "n/a"));
    if (!rows.some((r) => has(r.value))) return false;
    rows.sort((a, b) => (has(b.value) - has(a.value)) || (lowerIsBetter ? a.value - b.value : b.value - a.value));
    const shown = rows.filter((r) => has(r.value));
    const ends = [].concat(...shown.map((r) => [r.value, r.lo, r.hi, r.ceiling].filter((v) => has(v) && v > 0)));
    const log = ends.length > 1 && Math.max.apply(null, ends) / Math.min.apply(null, ends) > 30;
    const trace = {
      type: "bar",
      orientation: "h",
      y: rows.map((r) => r.s),
      x: rows.map((r) => (has(r.value) ? r.value : null)),
      marker: {
        color: rows.map((r) => D.colors[r.s]),
        pattern: { shape: rows.map((r) => (r.bound ? "/" : "")), fgcolor: "#fff" },
        line: { color: rows.map((r) => D.colors[r.s]), width: 1.5 },
      },
      error_x: {
        type: "data", symmetric: false, color: "#333", thickness: 1, width: 3,
        array: rows.map((r) => (has(r.hi) && has(r.value) ? Math.max(0, r.hi - r.value) : 0)),
        arrayminus: rows.map((r) => (has(r.lo) && has(r.value) ? Math.max(0, r.value - r.lo) : 0)),
      },
      text: rows.map((r) => (has(r.value) ? boundPrefix(r.bound) + fmt(r.value, digits) : "")),
      textposition: "outside",
      cliponaxis: false,
      hovertext: rows.map((r) => r.s + (r.hover ? "<br>" + r.hover : "") + (has(r.lo) && r.hi > r.lo ? "<br>repeats " + fmt(r.lo, digits) + " - " + fmt(r.hi, digits) : "")),
      hovertemplate: "%{hovertext}<br>%{text}<extra></extra>",
      showlegend: false,
    };
    // a bound's reach: dashed from the figure to the server's CPU ceiling
    const reach = shown.filter((r) => has(r.ceiling)).map((r) => ({
      type: "scatter", mode: "lines+markers", x: [r.value, r.ceiling], y: [r.s, r.s], showlegend: false,
      line: { color: "#333", dash: "dash", width: 1 }, marker: { symbol: "line-ns-open", size: [0, 12], color: "#333" },
      hovertemplate: r.s + ": at most " + fmt(r.ceiling, digits) + " by CPU<extra></extra>",
    }));
    const annotations = rows.filter((r) => !has(r.value)).map((r) => ({
      x: 0.01, xref: "paper", y: r.s, text: r.gap, showarrow: false, xanchor: "left", font: { size: 11, color: "#777" },
    }));
    const notes = ["whiskers: min-max of the repeats"].concat(shown.some((r) => r.bound) ? ["hatched ≥: a bound, dashed to its CPU ceiling"] : [])
      .concat(log ? ["log scale"] : []);
    const lay = layout(title + (title.includes(" | ") ? "; " : " | ") + notes.join("; "), "", {
      annotations: annotations,
      height: 110 + 24 * rows.length,
      margin: { l: 140, r: 60, t: 70, b: 50 },
      xaxis: Object.assign({ title: { text: xtitle }, gridcolor: "#eee", type: log ? "log" : "linear", rangemode: log ? "normal" : "tozero", automargin: true }, log ? { dtick: 1 } : {}),
      yaxis: { autorange: "reversed", type: "category", automargin: true },
    });
    show(id, [trace].concat(reach), lay);
    return true;
  }

  // x of a spectrum point: 1 / (1 - p) at 20 steps per decade, the max at x = count
  function spectrumTrace(s, spec, name, dash, showlegend) {
    const xs = spec.ms.map((_, i) => Math.pow(10, i / D.steps_per_decade));
    xs.push(Math.max(spec.count, xs[xs.length - 1] * 1.05));
    const ys = spec.ms.concat([spec.max_ms]);
    return {
      type: "scatter", mode: "lines", x: xs, y: ys, name: name, legendgroup: s, showlegend: showlegend,
      line: { color: D.colors[s], dash: dash },
      hovertemplate: name + "<br>p%{customdata}: %{y:.3f} ms<extra></extra>",
      customdata: xs.map((x, i) => (i === xs.length - 1 ? "max" : (100 * (1 - 1 / x)).toPrecision(4))),
    };
  }
  function spectrumLayout(title) {
    return layout(title, "latency (ms, log)", {
      xaxis: { type: "log", title: { text: "percentile (log 1/(1-p))" }, tickvals: SPECTRUM_TICKS.map((t) => t[0]),
        ticktext: SPECTRUM_TICKS.map((t) => t[1]), gridcolor: "#eee" },
      yaxis: { type: "log", title: { text: "latency (ms, log)" }, gridcolor: "#eee" },
    });
  }

  // -- the charts ------------------------------------------------------------------------------
  // the first screen: each server's peak over the picked protocol (like with like) and its best
  // CPU per request there
  function headline(f) {
    const none = "No server has a cell ranked for this (each is left out: contended, erroring or failed; see the report below).";
    const peak = D.headline.peak[f.p] || {}, cpu = D.headline.cpu[f.p] || {};
    if (!serverBars("peak", "Peak req/s per server, " + protocolName(f.p) + " | best closed-loop cell of each", "req/s",
      f.servers, (s) => peak[s] || { value: null, gap: "n/a" }, 0)) empty("peak", none);
    if (!serverBars("cpu_best", "Server CPU per request, " + protocolName(f.p) + " | best cell of each; lower is better", "CPU us/req",
      f.servers, (s) => cpu[s] || { value: null, gap: "n/a" }, 2, true)) empty("cpu_best", none);
  }

  function throughput(f) {
    const cs = new Set();
    f.servers.forEach((s) => cellsOf(s, f.p, f.w, "closed").forEach((c) => cs.add(c.load)));
    const what = protocolName(f.p) + ", " + f.w;
    if (cs.size > 1) {  // several concurrencies: a line per server
      const traces = f.servers.map((s) => {
        const cells = cellsOf(s, f.p, f.w, "closed").filter((c) => c.rps);
        return {
          type: "scatter", mode: "lines+markers", name: s, x: cells.map((c) => c.load), y: cells.map((c) => c.rps[0]),
          line: { color: D.colors[s] },
          marker: { size: 9, color: D.colors[s], symbol: cells.map((c) => (!c.ranked.rps ? "x" : c.bound ? "triangle-up-open" : "circle")) },
          error_y: { type: "data", symmetric: false, array: cells.map((c) => c.rps[2] - c.rps[0]), arrayminus: cells.map((c) => c.rps[0] - c.rps[1]) },
          customdata: cells.map((c) => boundPrefix(c.bound) + (c.marks ? " " + c.marks : "")),
          hovertemplate: s + " C=%{x}<br>%{customdata} %{y:,.0f} req/s<extra></extra>",
        };
      }).filter((t) => t.x.length);
      if (!traces.length) return empty("throughput", "No closed-loop cell of " + what + " for these servers.");
      show("throughput", traces, layout("Throughput vs concurrency: " + what + " | median, min-max of repeats; open triangle = lower bound, x = excluded", "req/s",
        { xaxis: { type: "log", title: { text: "concurrency (connections)" }, tickvals: Array.from(cs).sort((a, b) => a - b), gridcolor: "#eee" } }));
      return;
    }
    const c = cs.size ? Array.from(cs)[0] : f.c;
    const ok = serverBars("throughput", "Throughput: " + what + ", C = " + c + " | median of repeats; hatched ≥ = lower bound", "req/s",
      f.servers, (s) => {
        const x = cell(s, f.p, f.w, "closed", c);
        return x && x.rps && x.ranked.rps
          ? { value: x.rps[0], bound: x.bound, lo: x.rps[1], hi: x.rps[2], ceiling: x.ceiling, hover: x.marks }
          : { value: null, gap: gap(x, "rps") };
      }, 0);
    if (!ok) empty("throughput", "No closed-loop cell of " + what + " for these servers.");
  }

  function latencySpectrum(f) {
    const what = protocolName(f.p) + ", " + f.w + ", C = " + f.c;
    const traces = [];
    const left = [];
    f.servers.forEach((s) => {
      const c = cell(s, f.p, f.w, "closed", f.c);
      if (c && c.spectrum) {
        const note = c.ranked.p99_ms ? "" : " (" + gap(c, "p99_ms") + ")";
        traces.push(spectrumTrace(s, c.spectrum, s + note, c.ranked.p99_ms ? "solid" : "dot", true));
      } else if (c) left.push(s + ": " + gap(c, "p99_ms"));
    });
    if (!traces.length) return empty("latency_spectrum", "No latency histogram for " + what + (left.length ? " (" + left.join("; ") + ")" : "") + ".");
    show("latency_spectrum", traces, spectrumLayout("Latency percentiles: " + what + " | the repeats' histograms added; dotted = not ranked"));
  }

  function perServerCell(id, title, ytitle, metric, value, digits, f, lowerIsBetter) {
    const what = protocolName(f.p) + ", " + f.w + ", C = " + f.c;
    const ok = serverBars(id, title + ": " + what, ytitle, f.servers, (s) => {
      const c = cell(s, f.p, f.w, "closed", f.c);
      const v = c && c.status === "ok" ? value(c) : null;
      return v !== null && v !== undefined && (!metric || c.ranked[metric]) ? { value: v, hover: c.marks } : { value: null, gap: gap(c, metric || "rps") };
    }, digits, lowerIsBetter);
    if (!ok) empty(id, "No measured cell of " + what + " for these servers.");
  }

  function openLoop(f) {
    if (!$("plot-open_loop")) return;
    const what = protocolName(f.p) + ", " + D.open_workload + ", " + f.open + " % of each server's closed-loop peak";
    const traces = [];
    f.servers.forEach((s) => {
      const c = cell(s, f.p, D.open_workload, "open", f.open);
      if (!c || !c.spectrum) return;
      const rate = c.rps ? " (" + fmt(c.rps[0], 0) + " req/s)" : "";
      traces.push(spectrumTrace(s, c.spectrum, s + rate, "solid", true));
      if (c.spectrum_uncorrected) traces.push(spectrumTrace(s, c.spectrum_uncorrected, s + " uncorrected", "dot", false));
    });
    if (!traces.length) return empty("open_loop", "No open-loop cell of " + what + " for these servers.");
    show("open_loop", traces, spectrumLayout("Open loop: " + what + " | solid: from the intended send (corrected); dotted: uncorrected"));
  }

  function connectionSetup(f) {
    if (!$("plot-connection_setup")) return;
    const tls = f.p === "https" || f.p === "h2";
    const ok = serverBars("connection_setup", "Connection setup, a new connection per request: " + protocolName(f.p),
      tls ? "full TLS handshakes/s" : "connections/s", f.servers, (s) => {
        const c = D.cells.find((x) => x.t === s && x.p === f.p && x.mode === "connect");
        return c && c.conn_per_s !== null && c.ranked.conn_per_s
          ? { value: c.conn_per_s, bound: c.bound, hover: "c=" + c.load + (c.marks ? " " + c.marks : "") }
          : { value: null, gap: gap(c, "rps") };
      }, 0);
    if (!ok) empty("connection_setup", "No connection-setup cell over " + f.p + " for these servers.");
  }

  function timelines(f) {
    if (!$("plot-timelines")) return;
    const what = protocolName(f.p) + ", " + f.w + ", C = " + f.c;
    const traces = [];
    f.servers.forEach((s) => {
      const c = cell(s, f.p, f.w, "closed", f.c);
      if (!c || !c.timeline) return;
      traces.push({ type: "scatter", mode: "lines+markers", name: s, x: c.timeline.t, y: c.timeline.rps,
        line: { color: D.colors[s] }, customdata: c.timeline.p99,
        hovertemplate: s + " %{x:.2f} s<br>%{y:,.0f} req/s, p99 %{customdata:.3f} ms<extra></extra>" });
    });
    if (!traces.length) return empty("timelines", "No timeline with " + D.min_timeline_points + " or more intervals for " + what + ".");
    show("timelines", traces, layout("req/s per interval (first repeat): " + what, "req/s",
      { xaxis: { title: { text: "seconds into the measured window" }, gridcolor: "#eee" } }));
  }

  // -- the cells of the slice, as a table --------------------------------------------------------
  function cellsTable(f) {
    const num = (v, d) => (v === null || v === undefined ? "" : fmt(v, d));
    const head = ["Server", "Mode", "C / load", "req/s (median)", "min-max", "p50 ms", "p99 ms", "p99.9 ms",
      "mean ms", "CPU us/req"].concat(D.allocations ? ["allocs/req", "bytes/req"] : [],
      D.kernel ? ["syscalls/req", "ctx switches/req"] : [], ["peak RSS MiB", "non-2xx + errors", "marks / why"]);
    const allocs = (c) => (!D.allocations ? [] : c.allocs_na ? ["n/a", "n/a"] : [num(c.allocs, 2), num(c.alloc_bytes, 0)]);
    // the kernel's reason stays whole: it says what to change (perf_event_paranoid, a seccomp filter)
    const kernel = (c) => (!D.kernel ? [] : [c.syscalls_na ? "n/a - " + c.syscalls_na : num(c.syscalls, 2), num(c.ctx_switches, 2)]);
    const rows = [];
    f.servers.forEach((s) => {
      D.cells.filter((c) => c.t === s && c.p === f.p && c.w === f.w)
        .filter((c) => c.mode !== "closed" || c.load === f.c || $("pick-all-c").checked)
        .sort((a, b) => a.mode.localeCompare(b.mode) || a.load - b.load)
        .forEach((c) => {
          const load = c.mode === "open" ? c.load + " %" : c.mode === "connect" ? "new conn, c=" + c.load : String(c.load);
          const why = c.status === "ok" ? [c.marks].concat(c.why.rps || []).filter(Boolean).join(" ") : c.status.toUpperCase() + (c.note ? ": " + c.note : "");
          rows.push([s, c.mode, load, c.rps ? boundPrefix(c.bound) + num(c.rps[0], 0) : "", c.rps ? num(c.rps[1], 0) + " - " + num(c.rps[2], 0) : "",
            num(c.p50, 3), num(c.p99, 3), num(c.p999, 3), num(c.mean, 3), num(c.cpu, 2)].concat(allocs(c), kernel(c), [num(c.rss, 1),
            c.bad === null || c.bad === undefined ? "" : (100 * c.bad).toFixed(2) + " %", why]));
        });
    });
    const table = document.createElement("table");
    const tr = table.createTHead().insertRow();
    head.forEach((h) => { const th = document.createElement("th"); th.textContent = h; tr.appendChild(th); });
    const body = table.createTBody();
    rows.forEach((r) => { const row = body.insertRow(); r.forEach((v) => { row.insertCell().textContent = v; }); });
    const box = $("cells-table");
    box.replaceChildren(table);
    $("cells-caption").textContent = rows.length + " cell(s): " + protocolName(f.p) + ", " + f.w +
      ($("pick-all-c").checked ? ", every C" : ", C = " + f.c) + ", with the open-loop and connection-setup cells of this protocol and workload.";
  }

  // -- the flame graphs of the slice (profile = true): each server's closed-loop cell at C -------
  function flamegraphs(f) {
    const box = $("flamegraphs");
    if (!box) return;
    const parts = [];
    let shown = 0;
    f.servers.forEach((s) => {
      const c = cell(s, f.p, f.w, "closed", f.c);
      const head = document.createElement("h4");
      head.textContent = s + ", " + protocolName(f.p) + ", " + f.w + ", C = " + f.c;
      parts.push(head);
      if (!c || !c.flamegraph) {
        const note = document.createElement("p");
        note.className = "note";
        note.textContent = "not profiled";
        parts.push(note);
        return;
      }
      const svg = document.createElement("object");
      svg.type = "image/svg+xml";
      svg.data = c.flamegraph;
      svg.style.width = "100%";
      svg.className = "flamegraph";
      svg.dataset.state = "loading";
      svg.addEventListener("load", () => { svg.dataset.state = "loaded"; });
      svg.addEventListener("error", () => {
        svg.dataset.state = "failed";
        const note = document.createElement("p");
        note.className = "note";
        note.textContent = "the flame graph " + c.flamegraph + " could not be shown here (missing beside report.html?)";
        svg.replaceWith(note);
      });
      const link = document.createElement("a");
      link.href = c.flamegraph;
      link.textContent = "open the flame graph on its own";
      parts.push(svg, link);
      shown += 1;
    });
    box.replaceChildren(...parts);
    $("flamegraphs-caption").textContent = shown + " flame graph(s): each from a separate profiled " +
      "window after the cell's measured repeats (perf, every process of the server); width is the " +
      "share of CPU samples; click a box to zoom.";
  }

  // A flame graph, once drawn in its <object>, posts its frame count and size (core/flamegraph.py):
  // the object takes the graph's proportions and says it rendered (data-frames).
  window.addEventListener("message", (e) => {
    const info = e.data && e.data.loadbenchFlamegraph;
    if (!info) return;
    document.querySelectorAll("#flamegraphs object").forEach((o) => {
      if (o.contentWindow !== e.source) return;
      o.dataset.frames = String(info.frames);
      if (info.width > 0 && info.height > 0) o.style.aspectRatio = info.width + " / " + info.height;
    });
  });

  function draw() {
    const f = slice();
    headline(f);
    throughput(f);
    latencySpectrum(f);
    perServerCell("cpu", "Server CPU per request", "CPU us/req", "cpu_us", (c) => c.cpu, 2, f, true);
    if ($("plot-allocs")) perServerCell("allocs", "Heap allocations per request (libc malloc calls)", "allocs/req", "allocs_per_req", (c) => c.allocs, 2, f, true);
    perServerCell("rss", "Server peak RSS", "MiB", null, (c) => c.rss, 1, f, true);
    openLoop(f);
    connectionSetup(f);
    timelines(f);
    cellsTable(f);
    flamegraphs(f);
  }

  const FIGURES = JSON.parse(document.getElementById("figures").textContent);
  Object.keys(FIGURES).forEach((id) => Plotly.newPlot("plot-" + id, FIGURES[id].data, FIGURES[id].layout, CONFIG));
  document.querySelectorAll("#controls select, #controls input").forEach((el) => el.addEventListener("change", draw));
  draw();
})();
