/* Search in the static mirror (scoreboard/server/archive/static.py), in the browser: the mirror's
 * search.html is the board's empty search page, and this script answers its ?q= from the index the
 * export wrote (search-index.js: window.palaestraMirrorSearch, one entry per env, algorithm and user
 * page, with its link relative to the mirror's root). Hits are listed as the board's search lists
 * them (envs, then algorithms, then users; an id or a name containing the text, case-insensitive).
 * Names are set as text, never as HTML. */
(function () {
  "use strict";

  var KINDS = ["env", "algorithm", "user"];
  var MAX_SHOWN = 500;

  function matches(entry, needle) {
    return entry.label.toLowerCase().indexOf(needle) >= 0 || entry.id.toLowerCase().indexOf(needle) >= 0;
  }

  function hitItem(entry) {
    var li = document.createElement("li");
    li.className = "hit " + entry.kind;
    var tag = document.createElement("span");
    tag.className = "tag";
    tag.textContent = entry.kind;
    var link = document.createElement("a");
    link.href = entry.url;
    link.textContent = entry.label;
    li.appendChild(tag);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(link);
    return li;
  }

  function init() {
    var main = document.querySelector("main");
    var text = (new URLSearchParams(window.location.search).get("q") || "").trim();
    var input = main.querySelector("input[name=q]");
    if (input) input.value = text;
    if (!text) return;
    var needle = text.toLowerCase();
    var index = window.palaestraMirrorSearch || [];
    var hits = [];
    KINDS.forEach(function (kind) {
      index.forEach(function (entry) { if (entry.kind === kind && matches(entry, needle)) hits.push(entry); });
    });
    var summary = document.createElement("p");
    summary.id = "mirror-search-summary";
    if (!hits.length) {
      summary.className = "empty";
      summary.textContent = "Nothing matches \u201c" + text + "\u201d.";
      main.appendChild(summary);
      return;
    }
    summary.textContent = hits.length + (hits.length === 1 ? " match" : " matches") +
      (hits.length > MAX_SHOWN ? " (the first " + MAX_SHOWN + " shown)" : "") + ".";
    var list = document.createElement("ul");
    list.className = "hits";
    hits.slice(0, MAX_SHOWN).forEach(function (entry) { list.appendChild(hitItem(entry)); });
    main.appendChild(summary);
    main.appendChild(list);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
