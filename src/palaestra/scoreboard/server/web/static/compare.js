/* The compare page: several evaluations' rewards on one uPlot chart (web/compare.py writes the data).
 *
 * Data: <script id="compare-data">{threshold, series: [{id, label, color, reward: ys,
 * episode: xs, timestep: xs, seconds: xs}]}</script> (an x may be null: that point is left out); settings (axis, smoothing, ema, window) come from the
 * controls' form, which the server filled from the query string. Changing a control redraws at once
 * and rewrites the address (history.replaceState), so the URL in the address bar is always the
 * shareable one. Smoothing:
 *   ema:    the debiased exponential moving average of TensorBoard and W&B (weight 0..0.999);
 *   window: the mean of the last `window` points (as the running mean of web/curves.py).
 * The chart element gets data-series, data-x and data-smoothing once drawn (for tests and people).
 */
(function () {
  "use strict";

  var common = window.palaestraCommon;
  var X_LABELS = { episode: "episode", timestep: "timestep", seconds: "wall-clock seconds" };
  var THRESHOLD_COLOR = "#d1242f";

  function ema(ys, weight) {
    var last = 0, n = 0;
    return ys.map(function (y) {
      if (y === null || y === undefined) return null;
      n += 1;
      last = last * weight + (1 - weight) * y;
      return last / (1 - Math.pow(weight, n));
    });
  }

  function windowMean(ys, size) {
    var kept = [], sum = 0;
    return ys.map(function (y) {
      if (y === null || y === undefined) return null;
      kept.push(y);
      sum += y;
      if (kept.length > size) sum -= kept.shift();
      return sum / kept.length;
    });
  }

  function smooth(ys, state) {
    if (state.smoothing === "ema" && state.ema > 0) return ema(ys, state.ema);
    if (state.smoothing === "window" && state.window > 1) return windowMean(ys, state.window);
    return ys.slice();
  }

  function readState(form) {
    var data = new FormData(form);
    return {
      axis: data.get("x") || "episode",
      smoothing: data.get("smooth") || "none",
      ema: Math.min(0.999, Math.max(0, parseFloat(data.get("ema")) || 0)),
      window: Math.min(10000, Math.max(1, parseInt(data.get("window"), 10) || 1)),
    };
  }

  function shareUrl(ids, state) {
    var query = new URLSearchParams();
    ids.forEach(function (id) { query.append("e", id); });
    query.set("x", state.axis);
    query.set("smooth", state.smoothing);
    if (state.smoothing === "ema") query.set("ema", String(state.ema));
    if (state.smoothing === "window") query.set("window", String(state.window));
    return "/compare?" + query.toString();
  }

  function build(el, data, state) {
    var tables = data.series.map(function (s) {
      var xs = [], ys = [];
      s[state.axis].forEach(function (x, i) {
        if (x !== null && x !== undefined) { xs.push(x); ys.push(s.reward[i]); }
      });
      return [xs, smooth(ys, state)];
    });
    var columns = uPlot.join(tables);
    var series = [{ label: X_LABELS[state.axis] }];
    data.series.forEach(function (s) {
      series.push({ label: s.label, stroke: s.color, width: 2, spanGaps: true, points: { show: false } });
    });
    var threshold = data.threshold;
    if (threshold !== null && threshold !== undefined) {
      series.push({ label: "threshold", stroke: THRESHOLD_COLOR, width: 1.5, dash: [6, 4], points: { show: false } });
      columns.push(columns[0].map(function () { return threshold; }));
    }
    var opts = {
      title: "Reward against " + X_LABELS[state.axis],
      width: common.widthOf(el),
      height: 360,
      scales: { x: { time: false }, y: { range: common.yRange(threshold) } },
      axes: [common.axis(X_LABELS[state.axis], state.axis === "episode"), common.axis("reward", false)],
      series: series,
    };
    el.innerHTML = "";
    var plot = new uPlot(opts, columns, el);
    el.setAttribute("data-series", String(data.series.length));
    el.setAttribute("data-x", state.axis);
    el.setAttribute("data-smoothing", state.smoothing);
    return plot;
  }

  function init() {
    var data = common && common.readJson("compare-data");
    var el = document.getElementById("compare-chart");
    var form = document.getElementById("compare-controls");
    if (!data || !el || !form || !data.series.length) return;
    if (typeof window.uPlot !== "function") {
      el.textContent = "Charts are unavailable: uPlot did not load.";
      return;
    }
    var ids = data.series.map(function (s) { return s.id; });
    var share = document.getElementById("share-url");
    var plot = null;
    function draw() {
      var state = readState(form);
      form.querySelector("[data-for=ema]").hidden = state.smoothing !== "ema";
      form.querySelector("[data-for=window]").hidden = state.smoothing !== "window";
      if (plot) plot.destroy();
      plot = build(el, data, state);
      var url = shareUrl(ids, state);
      if (share) { share.href = url; share.textContent = location.origin + url; }
      history.replaceState(null, "", url);
      window.palaestraCompare = { plot: plot, state: state };
    }
    draw();
    form.addEventListener("input", draw);
    form.addEventListener("change", draw);
    form.addEventListener("submit", function (event) { event.preventDefault(); draw(); });
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () { plot.setSize({ width: common.widthOf(el), height: 360 }); }, 150);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
