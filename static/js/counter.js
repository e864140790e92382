/* Live character counters for textareas with data-limit. Loaded with
   <script src> (the CSP forbids inline scripts). Delegated from document so
   textareas swapped in by htmx need no re-binding. Counts code points, as the
   server does (Python len), and CRLF as one character, as the server stores it. */
(function () {
  "use strict";

  function count(text) {
    return Array.from(text.replace(/\r\n/g, "\n")).length;
  }

  function update(textarea) {
    var limit = parseInt(textarea.getAttribute("data-limit"), 10);
    if (!textarea.id || isNaN(limit)) return;
    var output = document.querySelector('output[for="' + textarea.id + '"]');
    if (!output) return;
    var chars = count(textarea.value);
    output.textContent = chars.toLocaleString() + " / " + limit.toLocaleString() + " characters" +
      (chars > limit ? " — " + (chars - limit).toLocaleString() + " over the limit" : "");
    output.classList.toggle("over-limit", chars > limit);
    output.classList.toggle("near-limit", chars <= limit && chars > limit * 0.8);
    textarea.setAttribute("aria-invalid", chars > limit ? "true" : "false");
  }

  function updateAll(root) {
    (root || document).querySelectorAll("textarea[data-limit]").forEach(update);
  }

  document.addEventListener("input", function (event) {
    var target = event.target;
    if (target instanceof HTMLTextAreaElement && target.hasAttribute("data-limit")) update(target);
  });
  document.addEventListener("DOMContentLoaded", function () { updateAll(document); });
  document.addEventListener("htmx:load", function (event) { updateAll(event.target); });
})();
