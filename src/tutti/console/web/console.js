// The live console: samples from /console/events (server-sent events, one a
// second; fields in the README's console section) drawn as they come.
"use strict";
(() => {
  const main = document.getElementById("main");
  const status = document.getElementById("status");
  const keepSeconds = 300;
  const samples = [];
  let ui = null;

  const sum = (xs) => xs.reduce((a, b) => a + (b || 0), 0);
  const total = (s, key) => sum(s.models.map((m) => m[key]));
  // GPU-seconds the executors spent running batches in the sample's second.
  const busySeconds = (s) => sum(s.executors.map((e) => e.busy));

  function build(s) {
    const maxModels = 12;
    const cluster = TT.section(main, "Cluster", "cluster");
    const cards = TT.cards(cluster, [
      ["executors in use", "–", "in-use"], ["offered r/s", "–", "offered-total"], ["goodput r/s", "–", "goodput-total"],
      ["bad rate", "–", "bad-rate"], ["idle fraction", "–", "idle"], ["GPU-s per s", "–", "gpu-seconds"],
      ["autoscaling advice (GPUs)", "–", "advice"],
    ]);
    const process = TT.el("div", {class: "note", id: "process"});
    cluster.appendChild(process);
    const events = TT.el("ul", {class: "note", id: "cluster-events"});
    cluster.appendChild(events);
    const charts = TT.el("div", {class: "charts"});
    TT.section(main, "Over the last five minutes").appendChild(charts);
    const rates = TT.lineChart(charts, "Requests/s", "r/s", [
      {label: "offered", color: "#2563eb"}, {label: "goodput", color: "#16a34a", fill: true},
      {label: "bad", color: "#b42318"}]);
    const causes = TT.lineChart(charts, "Bad requests/s by cause", "r/s", [
      {label: "late", color: "#dc2626"}, {label: "dropped", color: "#ea580c"},
      {label: "rejected", color: "#9333ea"}, {label: "error", color: "#4b5563"}]);
    const shown = s.models.slice(0, maxModels);
    const latency = TT.lineChart(charts, "p50 and p99 latency (ms; thin: p50, dashed: objective)", "ms", [
      ...shown.map((m, i) => ({label: `${m.name} p99`, color: TT.color(i)})),
      ...shown.map((m, i) => ({label: `${m.name} p50`, color: TT.color(i), width: 1})),
      ...shown.map((m, i) => ({label: `${m.name} objective`, color: TT.color(i), dash: [4, 4], width: 1}))]);
    const gpus = TT.lineChart(charts, "Executors (GPU-s per s: the time they ran batches)", "executors", [
      {label: "in use"}, {label: "GPU-s per s", color: "#7c3aed"}, {label: "advice: add", color: "#dc2626"},
      {label: "advice: remove", color: "#16a34a"}]);
    const models = TT.section(main, "Models (last second)", "models-section");
    const executors = TT.section(main, "Executors (last second)", "executors-section");
    const canvas = TT.el("canvas", {class: "timeline", id: "timeline"});
    executors.appendChild(TT.el("div", {class: "note"},
        "Batches by executor: dashed outline = the span the scheduler planned, filled = when it ran (colour: model; red: failed)."));
    executors.appendChild(canvas);
    const busy = TT.el("div");
    executors.appendChild(busy);
    const delays = TT.section(main, "Delays the scheduler plans with", "delays-section");
    const traces = TT.section(main, "Slowest traced requests", "traces-section");
    traces.appendChild(TT.el("div", {class: "note"},
        "Each second's slowest requests among those traced (tracing.sampling_ratio, or a caller's sampled traceparent), newest first; each links to its trace where tracing.link is set."));
    return {cards, process, events, backends: null, rates, causes, latency, gpus, models, busy, canvas, delays, shown,
            traces, slow: []};
  }

  function replace(section, node) {
    const old = section.querySelector("table, .kv");
    if (old) old.remove();
    section.appendChild(node);
  }

  function update(s) {
    if (!ui) ui = build(s);
    s.received_s = Date.now() / 1000;  // the x axis: when the page received it
    samples.push(s);
    while (samples.length && s.received_s - samples[0].received_s > keepSeconds) samples.shift();
    document.body.dataset.samples = String(samples.length);
    const c = s.cluster;
    document.getElementById("in-use").textContent = `${c.in_use} / ${c.executors}`;
    document.getElementById("offered-total").textContent = TT.fmt(total(s, "offered_rps"));
    document.getElementById("goodput-total").textContent = TT.fmt(total(s, "goodput_rps"));
    document.getElementById("bad-rate").textContent = `${TT.fmt(100 * c.bad_rate, 2)}%`;
    document.getElementById("idle").textContent = TT.fmt(c.idle_fraction, 2);
    document.getElementById("gpu-seconds").textContent = TT.fmt(busySeconds(s), 2);
    document.getElementById("advice").textContent = c.advice ? `+${c.advice.add} / −${c.advice.remove}` : "–";
    ui.process.textContent = c.process ? Object.entries(c.process).map(([k, v]) =>
        Array.isArray(v) ? `${k}: ${v.length}` : `${k}: ${v}`).join(" · ") : "";
    // Distributed mode: backends joining and leaving, as the samples show them.
    if (c.process && Array.isArray(c.process.backends)) {
      const now = new Set(c.process.backends);
      const when = new Date().toLocaleTimeString();
      if (ui.backends) {
        for (const b of now) if (!ui.backends.has(b)) ui.events.prepend(TT.el("li", {}, `${when} backend joined: ${b}`));
        for (const b of ui.backends) if (!now.has(b)) ui.events.prepend(TT.el("li", {}, `${when} backend left: ${b}`));
      } else {
        for (const b of now) ui.events.prepend(TT.el("li", {}, `${when} backend live: ${b}`));
      }
      ui.backends = now;
    }

    const t = samples.map((x) => x.received_s);
    const series = (f) => samples.map(f);
    ui.rates.setData([t, series((x) => total(x, "offered_rps")), series((x) => total(x, "goodput_rps")),
                      series((x) => total(x, "late_rps") + total(x, "dropped_rps") + total(x, "error_rps"))]);
    ui.causes.setData([t, ...["late_rps", "dropped_rps", "rejected_rps", "error_rps"].map((k) => series((x) => total(x, k)))]);
    ui.latency.setData([t, ...ui.shown.map((_, i) => series((x) => x.models[i].p99_ms)),
                        ...ui.shown.map((_, i) => series((x) => x.models[i].p50_ms)),
                        ...ui.shown.map((_, i) => series((x) => x.models[i].objective_ms))]);
    ui.gpus.setData([t, series((x) => x.cluster.in_use), series(busySeconds),
                     series((x) => x.cluster.advice ? x.cluster.advice.add : null),
                     series((x) => x.cluster.advice ? x.cluster.advice.remove : null)]);

    const headers = ["model", "objective ms", "offered r/s", "goodput r/s", "late", "dropped", "rejected", "error",
                     "p50 ms", "p99 ms", "batch sizes", "graph steps (deadline share)"];
    const row = (m) => [m.name, TT.fmt(m.objective_ms), TT.fmt(m.offered_rps), TT.fmt(m.goodput_rps),
                        TT.fmt(m.late_rps), TT.fmt(m.dropped_rps), TT.fmt(m.rejected_rps), TT.fmt(m.error_rps),
                        TT.fmt(m.p50_ms, 2), TT.fmt(m.p99_ms, 2),
                        TT.bars(m.batch_sizes.map((b) => b[1]), m.batch_sizes.map((b) => b[0] === null ? "more" : `≤ ${b[0]}`)),
                        m.steps.map((st) => `${st.model} ${TT.fmt(100 * st.deadline_share, 0)}%`).join(" · ")];
    // Thousands of models: the busiest first, every one behind a fold.
    const maxRows = 25;
    const models = TT.el("div", {class: "kv"});
    if (s.models.length > maxRows) {
      const busiest = [...s.models].sort((a, b) => (b.offered_rps || 0) - (a.offered_rps || 0)).slice(0, maxRows);
      models.appendChild(TT.el("div", {class: "note"}, `The ${maxRows} busiest of ${s.models.length} models:`));
      TT.table(models, headers, busiest.map(row), "busiest-models");
      const all = TT.el("details", {id: "all-models"});
      all.appendChild(TT.el("summary", {}, `All ${s.models.length} models`));
      if (ui.allOpen) all.open = true;
      all.addEventListener("toggle", () => { ui.allOpen = all.open; });
      TT.table(all, headers, s.models.map(row), "models");
      models.appendChild(all);
    } else {
      TT.table(models, headers, s.models.map(row), "models");
    }
    replace(ui.models, models);
    TT.timeline(ui.canvas, s.executors.length || (1 + Math.max(-1, ...s.batches.map((b) => b[0]))), s.batches, 1000);
    replace(ui.busy, TT.table(document.createElement("div"), ["executor", "busy", "batches"],
        s.executors.map((e) => [String(e.id), `${TT.fmt(100 * e.busy, 1)}%`,
                                String(s.batches.filter((b) => b[0] === e.id).length)])));
    const d = s.delays;
    const kv = TT.el("div", {class: "kv"});
    TT.table(kv, ["delay", "planned µs", "measured µs"], Object.keys(d.planned_us).map((k) =>
        [k, TT.fmt(d.planned_us[k]), TT.fmt(d.measured_us[k])]));
    kv.appendChild(TT.el("div", {class: "note"},
        `measured: ${d.measured} · quantile ${d.quantile} (planned at ${d.planned_quantile}) over ${d.window_s} s`));
    if (d.compute.length) {
      const compute = [...d.compute].sort((a, b) => b.batches - a.batches).slice(0, 25);
      if (compute.length < d.compute.length) {
        kv.appendChild(TT.el("div", {class: "note"},
            `Compute of the ${compute.length} (executor, model) pairs with the most batches, of ${d.compute.length}:`));
      }
      TT.table(kv, ["executor", "model", "batches", "real/profiled", "planned scale", "tail scale", "late start µs"],
          compute.map((x) => [String(x.executor), s.models[x.model] ? s.models[x.model].name : String(x.model),
                                String(x.batches), TT.fmt(x.ratio, 3), TT.fmt(x.scale, 3), TT.fmt(x.tail_scale, 3),
                                TT.fmt(x.late_start_us)]));
    }
    replace(ui.delays, kv);

    const when = new Date().toLocaleTimeString();
    ui.slow = [...(s.slow_traces || []).map((x) => ({...x, when})), ...ui.slow].slice(0, 20);
    replace(ui.traces, TT.table(document.createElement("div"), ["when", "request", "ms", "error", "trace"],
        ui.slow.map((x) => [x.when, x.name, TT.fmt(x.ms, 2), x.error || "",
                            x.url ? TT.el("a", {href: x.url, target: "_blank", rel: "noopener"}, x.trace_id) : x.trace_id]),
        "slow-traces"));
  }

  function connect() {
    const events = new EventSource("/console/events");
    events.addEventListener("open", () => { status.textContent = "live"; });
    events.addEventListener("sample", (e) => {
      try {
        update(JSON.parse(e.data));
        status.textContent = `live · ${new Date().toLocaleTimeString()}`;
      } catch (err) {
        status.textContent = `bad sample: ${err}`;
      }
    });
    events.addEventListener("error", () => { status.textContent = "disconnected: retrying…"; });
  }
  connect();
})();
