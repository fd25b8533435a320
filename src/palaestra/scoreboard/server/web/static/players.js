/* Terminal recordings (the 2017 "video/vnd.openai.ansivid" videos, asciicast v1 JSON) in
 * asciinema-player (web/package.json). The poster is the first frame, so the page shows the board
 * before anyone presses play.
 *
 * The recording is fetched here and handed to the player as data: asciinema-player 3.x reads a
 * v1 *object*, but mistakes a v1 file written on one line (as gym's TextEncoder writes it) for
 * asciicast v2/v3 JSON-lines and refuses it. Anything that is not v1 JSON is passed on as text. */
(function () {
  "use strict";

  function load(url) {
    return fetch(url, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("failed fetching " + url + ": " + response.status);
        return response.text();
      })
      .then(function (text) {
        try {
          var doc = JSON.parse(text);
          if (doc && doc.version === 1) return doc;
        } catch (e) { /* JSON lines (asciicast v2/v3): the player parses the text */ }
        return text;
      });
  }

  /* The poster: just after the first frame was written (v1 delays are relative). */
  function posterTime(data) {
    if (typeof data === "object" && Array.isArray(data.stdout) && data.stdout.length) {
      return Number(data.stdout[0][0]) + 0.01;
    }
    return 1;
  }

  function show(el, data) {
    var opts = { preload: true, poster: "npt:" + posterTime(data), fit: "width", idleTimeLimit: 2,
                 theme: "asciinema" };
    var player = window.AsciinemaPlayer.create({ data: data }, el, opts);
    el.classList.add("ready");
    window.palaestraPlayers.push(player);
  }

  function init() {
    var nodes = document.querySelectorAll(".terminal-player[data-src]");
    if (!nodes.length) return;
    if (!window.AsciinemaPlayer) {
      nodes.forEach(function (el) { el.textContent = "The terminal player is unavailable: asciinema-player did not load."; });
      return;
    }
    window.palaestraPlayers = [];
    nodes.forEach(function (el) {
      load(el.getAttribute("data-src")).then(
        function (data) { show(el, data); },
        function (error) { el.textContent = "The recording could not be loaded (" + error.message + ")."; }
      );
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
