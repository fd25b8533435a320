// The live-run page (/live/{id}): fetch /live/{id}.json every few seconds and update the status line,
// the counts and the learning curves (drawn by charts.js, as on an evaluation's page: axes, labels,
// the running mean, the threshold) without a reload. Stops once the run is sealed (and goes to its
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

  function drawCurves(curves) {
    var empty = document.getElementById("curves-empty");
    if (empty) empty.hidden = !!(curves && curves.episode);
    if (window.palaestraCurves && curves && curves.episode) window.palaestraCurves.draw(curves);
  }

  function show(live) {
    status.textContent = statusText(live);
    document.getElementById("live-episodes").textContent = live.episodes;
    document.getElementById("live-timesteps").textContent = live.timesteps;
    document.getElementById("live-recent-label").textContent = live.recent_label;
    document.getElementById("live-recent-mean").textContent =
      live.recent_mean === null ? "—" : live.recent_mean.toFixed(2);
  }

  function poll() {
    fetch(url, { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (live) {
        if (!live) { setTimeout(poll, POLL_MS); return; }
        show(live);
        drawCurves(live.curves);
        if (live.status === "sealed" && live.evaluation_url) { window.location.assign(live.evaluation_url); return; }
        setTimeout(poll, POLL_MS);
      })
      .catch(function () { setTimeout(poll, POLL_MS); });
  }

  show(JSON.parse(document.getElementById("live-data").textContent));
  setTimeout(poll, POLL_MS);
})();
