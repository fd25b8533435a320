/* What every chart of the pages shares (loaded before charts.js, compare.js, stats-charts.js):
 *
 * - formatNumber: the one number format of the charts, the same as the tables' Jinja filter `num`
 *   (web/render.py fmt_number): thousands grouped with a thin space (U+2009), fixed decimals;
 * - axis(label, integerTicks): a uPlot axis whose tick labels use formatNumber; with integerTicks
 *   (episodes, counts) the ticks are whole numbers only, however far one zooms in;
 * - yRange(threshold): a uPlot range that always contains the threshold with some room above and
 *   below, so a threshold at the top of the data (FrozenLake's 0.78 with rewards 0 and 1) is drawn;
 * - widthOf(el), readJson(id).
 */
(function () {
  "use strict";

  var THIN_SPACE = "\u2009";
  var INTEGER_INCRS = [];
  [1, 2, 5].forEach(function (m) {
    for (var e = 0; e < 16; e++) INTEGER_INCRS.push(m * Math.pow(10, e));
  });
  INTEGER_INCRS.sort(function (a, b) { return a - b; });

  function group(text) {
    var parts = text.split(".");
    parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, THIN_SPACE);
    return parts.join(".");
  }

  /* As fmt_number: null -> an em dash; |x| >= 1e6 (not whole) -> 4 significant digits. */
  function formatNumber(value, digits) {
    if (value === null || value === undefined) return "\u2014";
    if (!isFinite(value)) return String(value);
    if (digits === undefined) digits = 2;
    if (Math.abs(value) >= 1e6 && !Number.isInteger(value)) return value.toPrecision(4);
    var text = value.toFixed(digits);
    if (text === "-" + (0).toFixed(digits)) text = text.slice(1);
    return group(text);
  }

  /* The decimals a tick increment needs (0.25 -> 2, 5 -> 0). */
  function decimalsOf(incr) {
    if (!incr || incr >= 1) return 0;
    var text = String(Number(incr.toPrecision(6)));
    var dot = text.indexOf(".");
    return dot < 0 ? 0 : Math.min(8, text.length - dot - 1);
  }

  function axis(label, integerTicks) {
    var out = {
      label: label,
      values: function (u, splits, axisIdx, space, incr) {
        var digits = decimalsOf(incr);
        return splits.map(function (v) { return v === null ? "" : formatNumber(v, digits); });
      },
    };
    if (integerTicks) out.incrs = INTEGER_INCRS;
    return out;
  }

  function yRange(threshold) {
    return function (u, min, max) {
      var lo = min, hi = max;
      if (lo === null || lo === undefined || !isFinite(lo)) lo = threshold;
      if (hi === null || hi === undefined || !isFinite(hi)) hi = threshold;
      if (threshold !== null && threshold !== undefined && isFinite(threshold)) {
        lo = Math.min(lo, threshold);
        hi = Math.max(hi, threshold);
      }
      if (lo === null || lo === undefined) return [0, 1];
      var span = hi - lo;
      var pad = span > 0 ? span * 0.06 : Math.max(Math.abs(hi) * 0.1, 0.5);
      return [lo - pad, hi + pad];
    };
  }

  function widthOf(el) {
    return Math.max(280, Math.floor(el.getBoundingClientRect().width || 600));
  }

  function readJson(id) {
    var node = document.getElementById(id);
    if (!node) return null;
    try { return JSON.parse(node.textContent); } catch (e) { return null; }
  }

  window.palaestraCommon = {
    formatNumber: formatNumber,
    axis: axis,
    yRange: yRange,
    widthOf: widthOf,
    readJson: readJson,
  };
})();
