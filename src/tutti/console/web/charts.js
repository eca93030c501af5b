// Drawing helpers shared by the live console and the reports (uPlot).
"use strict";
const TT = (() => {
  const palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
                   "#4b5563", "#65a30d", "#7c3aed", "#0d9488"];
  const color = (i) => palette[i % palette.length];
  const el = (tag, attrs = {}, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fmt = (v, digits = 1) => (v === null || v === undefined || !isFinite(v)) ? "–" :
      Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : Number(v).toFixed(digits);
  const section = (parent, title, id) => {
    const s = el("section", id ? {id} : {});
    s.appendChild(el("h2", {}, title));
    parent.appendChild(s);
    return s;
  };
  // A line chart: `series` [{label, color?, fill?, dash?}], x in seconds.
  // setData([xs, ys1, ys2, …]) redraws.
  function lineChart(parent, title, yLabel, series, opts = {}) {
    const box = el("div", {class: "chart"});
    parent.appendChild(box);
    const plot = new uPlot({
      title, width: opts.width || 560, height: opts.height || 220,
      scales: {x: {time: opts.time !== false}, y: opts.yRange ? {range: opts.yRange} : {}},
      axes: [{label: opts.xLabel}, {label: yLabel, size: 60}],
      series: [{label: opts.xName || "time"}, ...series.map((s, i) => ({
        label: s.label, stroke: s.color || color(i), width: s.width || 1.5,
        fill: s.fill ? (s.fillColor || (s.color || color(i)) + "55") : undefined,
        dash: s.dash, points: {show: !!s.points}, paths: s.points && !s.line ? () => null : undefined,
      }))],
    }, [[], ...series.map(() => [])], box);
    return {plot, setData: (data) => plot.setData(data)};
  }
  // A table of `rows` (arrays of strings or nodes) under `headers`.
  function table(parent, headers, rows, id) {
    const t = el("table", id ? {id} : {});
    const head = el("tr");
    for (const h of headers) head.appendChild(el("th", {}, h));
    t.appendChild(head);
    for (const r of rows) {
      const tr = el("tr");
      for (const c of r) {
        const td = el("td");
        if (c instanceof Node) td.appendChild(c); else td.textContent = c;
        tr.appendChild(td);
      }
      t.appendChild(tr);
    }
    parent.appendChild(t);
    return t;
  }
  // Tiny bars of counts (e.g. items by batch size), titled with `labels`.
  function bars(counts, labels) {
    const b = el("span", {class: "bars"});
    const max = Math.max(1, ...counts);
    counts.forEach((n, i) => {
      const s = el("span", {title: `${labels[i]}: ${n}`});
      s.style.height = `${Math.max(n > 0 ? 2 : 0, Math.round(18 * n / max))}px`;
      b.appendChild(s);
    });
    return b;
  }
  function cards(parent, items) {
    const c = el("div", {class: "cards"});
    for (const [k, v, id] of items) {
      const card = el("div", {class: "card"});
      const value = el("div", {class: "v"}, v);
      if (id) value.id = id;
      card.appendChild(value);
      card.appendChild(el("div", {class: "k"}, k));
      c.appendChild(card);
    }
    parent.appendChild(c);
    return c;
  }
  // Batches per executor on a canvas: the planned span as an outline, the
  // run as a filled bar coloured by model. batches: [executor, model, size,
  // decided, planned start, planned end, start, end, ok] in ms before now.
  function timeline(canvas, executors, batches, spanMs) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth, h = canvas.clientHeight;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    const left = 70, rows = Math.max(1, executors), rowH = (h - 20) / rows;
    const x = (ms) => left + (w - left - 10) * (1 + ms / spanMs);
    g.font = "11px system-ui"; g.fillStyle = "#5b6470";
    for (let e = 0; e < rows; ++e) g.fillText(`executor ${e}`, 4, 14 + e * rowH + rowH / 2);
    for (let t = 0; t <= 4; ++t) {
      const ms = -spanMs + t * spanMs / 4;
      g.fillText(`${Math.round(ms)} ms`, x(ms) - 20, h - 4);
      g.strokeStyle = "#eceef1"; g.beginPath(); g.moveTo(x(ms), 0); g.lineTo(x(ms), h - 16); g.stroke();
    }
    for (const [e, model, size, , ps, pe, s, end, ok] of batches) {
      if (end < -spanMs) continue;
      const y = 4 + e * rowH;
      g.strokeStyle = "#9ca3af"; g.setLineDash([3, 2]);
      g.strokeRect(x(ps), y, Math.max(1, x(pe) - x(ps)), rowH - 6);
      g.setLineDash([]);
      g.fillStyle = ok ? color(model) : "#b42318";
      g.fillRect(x(s), y + 3, Math.max(1, x(end) - x(s)), rowH - 12);
    }
  }
  // Renders a page's sections with an error, rather than a blank page.
  function fail(main, message) {
    const s = section(main, "Error");
    s.appendChild(el("pre", {class: "bad"}, message));
  }
  return {color, el, fmt, section, lineChart, table, bars, cards, timeline, fail};
})();
