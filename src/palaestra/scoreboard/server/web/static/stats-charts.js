/* The benchmark page's charts (rliable's set), drawn with uPlot from the server's numbers.
 *
 * Data: <script id="benchmark-data">{tasks, metrics: [[key, label]], algorithms: [{label, color,
 * per_task: [[value, low, high] | null per task], metrics: {key: [value, low, high]},
 * profile: {taus, fraction, low, high, has_interval}}]}</script>, written by web/benchmarks.py from
 * palaestra.benchmarks.statistics. low/high are null where no interval exists (one score per task):
 * then only the point is drawn.
 *
 * - #chart-task-scores, #chart-aggregates: a point per algorithm and category (task or metric) with
 *   its interval as a whisker; the elements get data-points and data-intervals once drawn;
 * - #chart-profiles: each algorithm's performance profile with its band shaded (data-bands);
 * - #chart-across (an algorithm's page): its mean or IQM curve across runs with the 95% band shaded,
 *   from <script id="across-data">{x, value, low, high, band, runs, metric, axis}</script> (web/aggregate.py),
 *   and the env's threshold; the element gets data-points and data-bands.
 */
(function () {
  "use strict";

  var common = window.palaestraCommon;
  var DPR = window.devicePixelRatio || 1;

  function unitRange(u, min, max) {
    var lo = Math.min(0, min === null ? 0 : min), hi = Math.max(1, max === null ? 1 : max);
    var pad = (hi - lo) * 0.05;
    return [lo - pad, hi + pad];
  }

  function offsetsOf(n) {
    var spread = Math.min(0.6, 0.15 * (n - 1));
    var out = [];
    for (var i = 0; i < n; i++) out.push(n === 1 ? 0 : -spread / 2 + (spread * i) / (n - 1));
    return out;
  }

  /* Points with whiskers: categories on x, one series per algorithm, pick(alg) -> intervals. */
  function intervalChart(el, title, xLabel, categories, algorithms, pick, yLabel) {
    var offsets = offsetsOf(algorithms.length);
    var tables = algorithms.map(function (alg, i) {
      var xs = [], ys = [];
      pick(alg).forEach(function (iv, c) {
        if (iv) { xs.push(c + offsets[i]); ys.push(iv[0]); }
      });
      return [xs, ys];
    });
    var columns = uPlot.join(tables);
    var points = 0, whiskers = 0;
    function drawWhiskers(u) {
      var ctx = u.ctx, cap = 5 * DPR;
      whiskers = 0;
      ctx.save();
      ctx.lineWidth = 2 * DPR;
      algorithms.forEach(function (alg, i) {
        ctx.strokeStyle = alg.color;
        pick(alg).forEach(function (iv, c) {
          if (!iv || iv[1] === null || iv[2] === null) return;
          var x = u.valToPos(c + offsets[i], "x", true);
          var y0 = u.valToPos(iv[1], "y", true), y1 = u.valToPos(iv[2], "y", true);
          ctx.beginPath();
          ctx.moveTo(x, y0); ctx.lineTo(x, y1);
          ctx.moveTo(x - cap, y0); ctx.lineTo(x + cap, y0);
          ctx.moveTo(x - cap, y1); ctx.lineTo(x + cap, y1);
          ctx.stroke();
          whiskers += 1;
        });
      });
      ctx.restore();
      el.setAttribute("data-intervals", String(whiskers));
    }
    algorithms.forEach(function (alg) { points += pick(alg).filter(Boolean).length; });
    var opts = {
      title: title,
      width: common.widthOf(el),
      height: 300,
      scales: {
        x: { time: false, range: function () { return [-0.5, categories.length - 0.5]; } },
        y: { range: unitRange },
      },
      axes: [
        {
          splits: function () { return categories.map(function (_, i) { return i; }); },
          values: function (u, splits) { return splits.map(function (i) { return categories[i] || ""; }); },
          grid: { show: false },
        },
        common.axis(yLabel, false),
      ],
      series: [{ label: xLabel, value: function (u, v) { return v === null ? "--" : categories[Math.round(v)] || ""; } }].concat(algorithms.map(function (alg) {
        return {
          label: alg.label, stroke: alg.color, paths: function () { return null; },
          points: { show: true, size: 10, width: 1, stroke: alg.color, fill: alg.color },
        };
      })),
      hooks: { draw: [drawWhiskers] },
    };
    el.innerHTML = "";
    var plot = new uPlot(opts, columns, el);
    el.setAttribute("data-points", String(points));
    return plot;
  }

  /* Performance profiles: a line per algorithm, its bootstrap band shaded where one exists. */
  function profileChart(el, algorithms) {
    var taus = algorithms.length ? algorithms[0].profile.taus : [];
    var columns = [taus];
    var bands = 0;
    algorithms.forEach(function (alg) { columns.push(alg.profile.fraction); });
    function drawBands(u) {
      bands = 0;
      algorithms.forEach(function (alg) {
        var p = alg.profile;
        if (p.has_interval && shade(u, p.taus, p.low, p.high, alg.color)) bands += 1;
      });
      el.setAttribute("data-bands", String(bands));
    }
    var opts = {
      title: "Performance profiles",
      width: common.widthOf(el),
      height: 300,
      scales: { x: { time: false }, y: { range: function () { return [0, 1.02]; } } },
      axes: [common.axis("normalised score τ", false), common.axis("fraction of runs with score > τ", false)],
      series: [{ label: "τ" }].concat(algorithms.map(function (alg) {
        return { label: alg.label, stroke: alg.color, width: 2, points: { show: false } };
      })),
      hooks: { draw: [drawBands] },
    };
    el.innerHTML = "";
    var plot = new uPlot(opts, columns, el);
    el.setAttribute("data-series", String(algorithms.length));
    return plot;
  }

  /* Shade between low and high (arrays aligned with xs) in colour; returns whether it drew. */
  function shade(u, xs, low, high, color) {
    if (!low || !high) return false;
    var ctx = u.ctx;
    ctx.save();
    ctx.globalAlpha = 0.18;
    ctx.fillStyle = color;
    ctx.beginPath();
    xs.forEach(function (x, i) {
      var px = u.valToPos(x, "x", true), py = u.valToPos(high[i], "y", true);
      if (i === 0) ctx.moveTo(px, py); else ctx.lineTo(px, py);
    });
    for (var i = xs.length - 1; i >= 0; i--) ctx.lineTo(u.valToPos(xs[i], "x", true), u.valToPos(low[i], "y", true));
    ctx.closePath();
    ctx.fill();
    ctx.restore();
    return true;
  }

  function acrossChart(el, data, threshold) {
    var color = "#1f6feb";
    var columns = [data.x, data.value];
    var series = [
      { label: data.axis },
      { label: data.metric === "iqm" ? "IQM across runs" : "mean across runs", stroke: color, width: 2.5, points: { show: false } },
    ];
    if (data.band) {
      // the band's edges as lines too, so that the y range contains them and hovering shows them
      columns.push(data.low, data.high);
      series.push({ label: "95% low", stroke: "rgba(31, 111, 235, 0.35)", width: 1, points: { show: false } });
      series.push({ label: "95% high", stroke: "rgba(31, 111, 235, 0.35)", width: 1, points: { show: false } });
    }
    if (threshold !== null && threshold !== undefined) {
      columns.push(data.x.map(function () { return threshold; }));
      series.push({ label: "threshold", stroke: "#d1242f", width: 1.5, dash: [6, 4], points: { show: false } });
    }
    var opts = {
      title: "Reward across " + data.runs + " run" + (data.runs === 1 ? "" : "s"),
      width: common.widthOf(el),
      height: 300,
      scales: { x: { time: false }, y: { range: common.yRange(threshold) } },
      axes: [common.axis(data.axis, data.axis === "episode"), common.axis("reward", false)],
      series: series,
      hooks: { draw: [function (u) {
        el.setAttribute("data-bands", shade(u, data.x, data.low, data.high, color) ? "1" : "0");
      }] },
    };
    el.innerHTML = "";
    var plot = new uPlot(opts, columns, el);
    el.setAttribute("data-points", String(data.x.length));
    return plot;
  }

  function initAcross() {
    var data = common && common.readJson("across-data");
    var el = document.getElementById("chart-across");
    if (!data || !el) return;
    if (typeof window.uPlot !== "function") {
      el.textContent = "Charts are unavailable: uPlot did not load.";
      return;
    }
    var plot = acrossChart(el, data, common.readJson("across-threshold"));
    window.palaestraAcross = plot;
    window.addEventListener("resize", function () { plot.setSize({ width: common.widthOf(el), height: 300 }); });
  }

  function init() {
    initAcross();
    var data = common && common.readJson("benchmark-data");
    if (!data || !data.algorithms.length) return;
    var tasksEl = document.getElementById("chart-task-scores");
    var metricsEl = document.getElementById("chart-aggregates");
    var profilesEl = document.getElementById("chart-profiles");
    if (typeof window.uPlot !== "function") {
      [tasksEl, metricsEl, profilesEl].forEach(function (el) {
        if (el) el.textContent = "Charts are unavailable: uPlot did not load.";
      });
      return;
    }
    var metricKeys = data.metrics.map(function (m) { return m[0]; });
    var plots = [
      intervalChart(tasksEl, "Normalised score per task", "task", data.tasks, data.algorithms,
        function (alg) { return alg.per_task; }, "normalised score"),
      intervalChart(metricsEl, "Aggregate metrics", "metric", data.metrics.map(function (m) { return m[1]; }), data.algorithms,
        function (alg) { return metricKeys.map(function (k) { return alg.metrics[k]; }); }, "normalised score"),
      profileChart(profilesEl, data.algorithms),
    ];
    var els = [tasksEl, metricsEl, profilesEl];
    window.palaestraStatsCharts = plots;
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        plots.forEach(function (p, i) { p.setSize({ width: common.widthOf(els[i]), height: 300 }); });
      }, 150);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
