// The live-run page (/live/{id}): fetch /live/{id}.json every few seconds and update the status line,
// the counts and the reward curve without a reload. Stops once the run is sealed (and goes to its
// evaluation's page).
(function () {
  "use strict";
  var POLL_MS = 2000;
  var status = document.getElementById("live-status");
  if (!status) return;
  var url = status.getAttribute("data-poll");

  function statusText(live) {
    var ago = live.seconds_since_last_episode;
    if (live.status === "in_progress") {
      return ago === null ? "In progress, no episode yet." : "In progress, last episode " + Math.round(ago) + " s ago.";
    }
    if (live.status === "abandoned") {
      return "Abandoned: no episode for " + Math.round(ago || 0) + " s. Every episode it sent is kept; its owner can seal it.";
    }
    return live.status_label.charAt(0).toUpperCase() + live.status_label.slice(1) + ".";
  }

  function drawCurve(points) {
    var line = document.querySelector("#live-curve polyline");
    if (!line || !points.length) return;
    var xs = points.map(function (p) { return p[0]; });
    var ys = points.map(function (p) { return p[1]; });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    var sx = x1 > x0 ? 590 / (x1 - x0) : 0, sy = y1 > y0 ? 190 / (y1 - y0) : 0;
    line.setAttribute("points", points.map(function (p) {
      return (5 + (p[0] - x0) * sx).toFixed(1) + "," + (195 - (p[1] - y0) * sy).toFixed(1);
    }).join(" "));
  }

  function show(live) {
    status.textContent = statusText(live);
    document.getElementById("live-episodes").textContent = live.episodes;
    document.getElementById("live-timesteps").textContent = live.timesteps;
    document.getElementById("live-recent-mean").textContent =
      live.recent_mean === null ? "—" : live.recent_mean.toFixed(2);
    drawCurve(live.curve);
  }

  function poll() {
    fetch(url, { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (live) {
        if (!live) { setTimeout(poll, POLL_MS); return; }
        show(live);
        if (live.status === "sealed" && live.evaluation_url) { window.location.assign(live.evaluation_url); return; }
        setTimeout(poll, POLL_MS);
      })
      .catch(function () { setTimeout(poll, POLL_MS); });
  }

  show(JSON.parse(document.getElementById("live-data").textContent));
  setTimeout(poll, POLL_MS);
})();
