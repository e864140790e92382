/* Step through a diff's changes: the "Previous change" / "Next change"
   links and the n / p keys. Loaded with <script src> (the CSP forbids inline
   scripts and handlers). Delegated from document, so a diff swapped in by
   htmx needs no re-binding. Without this file the links still work as plain
   anchors to the first and last change. The stops are the rows marked
   data-change-start (the page's main diff only). */
(function () {
  "use strict";

  var current = 0; // 1-based index of the change last stepped to; 0 = none yet

  function stops() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-change-start]"));
  }

  function show(rows) {
    rows.forEach(function (row, i) { row.classList.toggle("current-change", i + 1 === current); });
    document.querySelectorAll("[data-change-count]").forEach(function (output) {
      var total = rows.length;
      output.textContent = current ? "Change " + current + " of " + total : total + (total === 1 ? " change" : " changes");
    });
    document.querySelectorAll("[data-change-nav]").forEach(function (link) {
      var next = link.getAttribute("data-change-nav") === "next";
      var index = next ? Math.min(current + 1, rows.length) : Math.max(current - 1, 1);
      if (rows[index - 1]) link.setAttribute("href", "#" + rows[index - 1].id);
    });
  }

  function step(delta) {
    var rows = stops();
    if (!rows.length) return;
    if (current === 0 && delta < 0) current = rows.length + 1;
    current = Math.min(Math.max(current + delta, 1), rows.length);
    var row = rows[current - 1];
    row.scrollIntoView({ block: "center" });
    if (history.replaceState) history.replaceState(null, "", "#" + row.id);
    show(rows);
  }

  function typing(target) {
    return target instanceof Element && target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    if (document.querySelector("dialog[open]")) return; // a modal dialog has the keyboard
    if (event.key === "n") { event.preventDefault(); step(1); }
    else if (event.key === "p") { event.preventDefault(); step(-1); }
  });

  document.addEventListener("click", function (event) {
    var link = event.target instanceof Element ? event.target.closest("[data-change-nav]") : null;
    if (!link) return;
    event.preventDefault();
    step(link.getAttribute("data-change-nav") === "next" ? 1 : -1);
  });

  function start() {
    var rows = stops();
    var hash = window.location.hash.slice(1);
    current = 0;
    rows.forEach(function (row, i) { if (row.id === hash) current = i + 1; });
    show(rows);
  }

  document.addEventListener("DOMContentLoaded", start);
  document.addEventListener("htmx:afterSettle", start);
})();
