/* Learning curves of an evaluation page, drawn with uPlot (web/package.json).
 *
 * Data: the JSON in <script id="curves-data">, written by the server (web/curves.py):
 *   {episode, timestep, seconds, reward, length, reward_mean, length_mean: number[], threshold, trials, ...}
 * Two charts (reward, length), x axis chosen with the radio buttons. For tests and people alike,
 * each chart's container gets data-points (the number of points drawn) once it is drawn.
 * Axes, number format and the y range that always shows the threshold: common.js.
 * The live-run page (live.js) draws new data in the same charts with window.palaestraCurves.draw(data).
 */
(function () {
  "use strict";

  var X_LABELS = { episode: "episode", timestep: "timestep", seconds: "wall-clock seconds" };
  var common = window.palaestraCommon;
  var COLORS = { raw: "rgba(31, 111, 235, 0.45)", mean: "#1f6feb", threshold: "#d1242f" };

  function buildChart(el, data, xKey) {
    var yKey = el.getAttribute("data-y");
    var xs = data[xKey];
    var series = [{ label: X_LABELS[xKey] }];
    var columns = [xs];
    series.push({ label: yKey + " per episode", stroke: COLORS.raw, width: 1, points: { show: xs.length <= 200 } });
    columns.push(data[yKey]);
    series.push({ label: data.trials + "-episode mean", stroke: COLORS.mean, width: 2.5, points: { show: false } });
    columns.push(data[yKey + "_mean"]);
    var threshold = yKey === "reward" ? data.threshold : null;
    if (threshold !== null && threshold !== undefined) {
      series.push({ label: "threshold", stroke: COLORS.threshold, width: 1.5, dash: [6, 4], points: { show: false } });
      columns.push(xs.map(function () { return data.threshold; }));
    }
    var opts = {
      title: (yKey === "reward" ? "Reward" : "Episode length") + " against " + X_LABELS[xKey],
      width: common.widthOf(el),
      height: 260,
      scales: { x: { time: false }, y: { range: common.yRange(threshold) } },
      axes: [common.axis(X_LABELS[xKey], xKey === "episode"), common.axis(yKey, yKey === "length")],
      series: common.withValues(series),
    };
    el.innerHTML = "";
    var plot = new uPlot(opts, columns, el);
    el.setAttribute("data-points", String(xs.length));
    el.setAttribute("data-series", String(series.length - 1));
    el.setAttribute("data-x", xKey);
    return plot;
  }

  function init() {
    var data = common && common.readJson("curves-data");
    var charts = Array.prototype.slice.call(document.querySelectorAll(".chart[data-y]"));
    if (!charts.length) return;
    if (typeof window.uPlot !== "function") {
      charts.forEach(function (el) { el.textContent = "Charts are unavailable: uPlot did not load."; });
      return;
    }
    var plots = [];
    var xKey = "episode";
    function drawAll() {
      if (!data || !data[xKey]) return;  // a live run with no training episode yet
      plots.forEach(function (p) { p.destroy(); });
      plots = charts.map(function (el) { return buildChart(el, data, xKey); });
      window.palaestraCharts = plots;
    }
    window.palaestraCurves = { draw: function (next) { data = next; drawAll(); } };
    drawAll();
    document.querySelectorAll("form.axis input[name=x]").forEach(function (input) {
      input.addEventListener("change", function () {
        if (input.checked && data[input.value]) { xKey = input.value; drawAll(); }
      });
    });
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        plots.forEach(function (p, i) { p.setSize({ width: common.widthOf(charts[i]), height: 260 }); });
      }, 150);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
