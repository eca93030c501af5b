// A report: the data embedded in the page (#tutti-data) drawn once —
// a simulation's time series (Symphony Figure 15's panels) or a load
// test's goodput search. Fields: the README's console section.
"use strict";
(() => {
  const main = document.getElementById("main");
  const report = JSON.parse(document.getElementById("tutti-data").textContent);
  const status = document.getElementById("status");
  status.textContent = report.subtitle || "";

  function simulation(d) {
    const s = TT.section(main, "Summary");
    TT.cards(s, [["policy", d.policy], ["GPUs", String(d.gpus)], ["offered r/s", TT.fmt(d.summary.offered_rps)],
                 ["goodput r/s", TT.fmt(d.summary.goodput_rps)], ["bad rate", `${TT.fmt(100 * d.summary.bad_rate, 2)}%`],
                 ["GPUs used", String(d.summary.gpus_used)]]);
    const charts = TT.el("div", {class: "charts"});
    TT.section(main, `Over ${TT.fmt(d.t.length * d.interval_s / 60, 0)} minutes of virtual time, per ${d.interval_s} s`)
        .appendChild(charts);
    const opts = {width: 1100, height: 240, time: false, xLabel: "virtual time (s)"};
    // Stacked: each model's goodput on the ones before it, the unsatisfied on top (grey).
    const stacked = [];
    let acc = d.t.map(() => 0);
    d.models.forEach((_, m) => { acc = acc.map((v, i) => v + d.good[m][i]); stacked.push(acc); });
    const withBad = acc.map((v, i) => v + d.bad_total[i]);
    const series = [{label: "unsatisfied", color: "#6b7280", fill: true, fillColor: "#9ca3af"}];
    const data = [withBad];
    for (let m = d.models.length - 1; m >= 0; --m) {
      series.push({label: d.models[m], color: TT.color(m), fill: true, fillColor: TT.color(m), width: 0.5});
      data.push(stacked[m]);
    }
    TT.lineChart(charts, "Goodput per model (stacked) and unsatisfied requests", "r/s", series, opts)
        .setData([d.t, ...data]);
    const gpuSeries = [{label: "GPUs used"}, {label: "GPUs", dash: [4, 4], color: "#4b5563"}];
    const gpuData = [d.t, d.gpus_used, d.t.map(() => d.gpus)];
    if (d.gpus_allocated.length) {  // closed-loop autoscaling: what was up
      gpuSeries.push({label: "GPUs allocated", color: "#7c3aed"});
      gpuData.push(d.gpus_allocated);
    }
    TT.lineChart(charts, "GPUs used", "GPUs", gpuSeries, opts).setData(gpuData);
    TT.lineChart(charts, "Autoscaling advice", "GPUs", [{label: "add", color: "#dc2626"},
                                                        {label: "remove", color: "#16a34a"}], opts)
        .setData([d.t, d.advice_add, d.advice_remove]);
    TT.lineChart(charts, "Bad rate", "%", [{label: "bad rate", color: "#b42318"}], opts)
        .setData([d.t, d.bad_rate.map((x) => 100 * x)]);
    if (d.loads && d.loads.length) {  // more models than memory: what the GPUs loaded and held
      TT.lineChart(charts, "Weights loads", "loads/s", [{label: "loads/s", color: "#7c3aed"}], opts)
          .setData([d.t, d.loads]);
      TT.lineChart(charts, "GPU memory held by weights (all GPUs, the most in each interval)", "GB",
          [{label: "GB", color: "#0e7490"}], opts).setData([d.t, d.memory_gb]);
    }
  }

  function load(d) {
    const s = TT.section(main, "Summary");
    TT.cards(s, [["SLO (p99) ms", TT.fmt(d.slo_ms)],
                 ["goodput r/s", d.goodput_rps === null ? "–" : TT.fmt(d.goodput_rps)],
                 ["probes", String(d.probes.length)]]);
    if (d.probes.length) {
      const charts = TT.el("div", {class: "charts"});
      TT.section(main, "Goodput search: every probe").appendChild(charts);
      const probes = [...d.probes].sort((a, b) => a.offered_rps - b.offered_rps);
      const x = probes.map((p) => p.offered_rps);
      const opts = {time: false, xLabel: "offered r/s", xName: "offered"};
      TT.lineChart(charts, "Goodput against offered load", "r/s",
          [{label: "goodput", points: true, line: true}, {label: "offered", dash: [4, 4], color: "#4b5563"}], opts)
          .setData([x, probes.map((p) => p.goodput_rps), x]);
      TT.lineChart(charts, "p99 latency against the SLO", "ms",
          [{label: "p99", points: true, line: true, color: "#dc2626"}, {label: "SLO", dash: [4, 4], color: "#4b5563"}], opts)
          .setData([x, probes.map((p) => p.p99_ms), x.map(() => d.slo_ms)]);
      TT.table(TT.section(main, "Probes"), ["#", "offered r/s", "goodput r/s", "p99 ms", "bad", "meets the SLO"],
          d.probes.map((p, i) => [String(i + 1), TT.fmt(p.offered_rps), TT.fmt(p.goodput_rps), TT.fmt(p.p99_ms, 2),
                                  `${TT.fmt(100 * p.bad_rate, 2)}%`, p.meets ? "yes" : "no"]));
    }
    const r = d.result;
    TT.table(TT.section(main, d.probes.length ? "At the goodput" : "Result"),
        ["model", "sent/s", "ok/s", "goodput/s", "bad", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms"],
        r.models.map((m) => [m.name, TT.fmt(m.sent_rps), TT.fmt(m.ok_rps), TT.fmt(m.goodput_rps),
                             `${TT.fmt(100 * m.bad_rate, 2)}%`, TT.fmt(m.p50_ms, 2), TT.fmt(m.p90_ms, 2),
                             TT.fmt(m.p99_ms, 2), TT.fmt(m.p999_ms, 2)]), "result");
  }

  try {
    if (report.kind === "simulation") simulation(report.data);
    else if (report.kind === "load") load(report.data);
    else TT.fail(main, `unknown report kind ${report.kind}`);
    document.body.dataset.rendered = "true";
  } catch (err) {
    TT.fail(main, String(err && err.stack || err));
  }
})();
