/* Keyboard triage for the review console (issue 14, item 1).

   Queue: j / k move between proposals, Enter or o opens the current one,
   x ticks (or unticks) the current one for the bulk form, as in Gmail and
   GitHub (the first row becomes current if none is).
   Proposal: j / k go to the next / previous proposal in the same filter,
   a goes to "Approve & next" (Enter confirms), r to the reject comment (a
   rejection needs a reason, so nothing is rejected blind), e opens the
   editor, w goes to the file's withhold form, Ctrl+Enter in a decision
   comment presses that form's "& next" button. n / p step through the diff
   (diff-nav.js). ? opens the help dialog everywhere.

   Every key only moves focus, follows a real link or presses a real
   button: the forms validate and post as they do without this file, and
   the server decides. Keys never fire while typing in a field. Loaded with
   <script src> (the CSP forbids inline scripts), delegated from document so
   fragments swapped in by htmx need no re-binding. */
(function () {
  "use strict";

  var FOCUS_FLAG = "mh-triage-focus";

  // Fields that take typed text (a focused checkbox, e.g. in the queue, does not).
  var NOT_TEXT = ["checkbox", "radio", "button", "submit", "reset", "image", "range", "color", "file"];

  function typing(target) {
    if (!(target instanceof Element)) return false;
    var field = target.closest("input, textarea, select, [contenteditable]:not([contenteditable=false])");
    if (!field) return false;
    return !(field instanceof HTMLInputElement && NOT_TEXT.indexOf(field.type) >= 0);
  }

  function key(name) {
    return document.querySelector('[data-key="' + name + '"]');
  }

  function focus(element) {
    if (!element) return false;
    if (element.tabIndex < 0 && !element.hasAttribute("tabindex")) element.setAttribute("tabindex", "-1");
    element.focus({ preventScroll: true });
    element.scrollIntoView({ block: "nearest" });
    return true;
  }

  function follow(link) {
    if (!link || !link.href) return false;
    window.location.assign(link.href);
    return true;
  }

  // --- the queue: a roving "current" row --------------------------------------------

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-queue-row]"));
  }

  function currentIndex(list) {
    var active = document.activeElement;
    for (var i = 0; i < list.length; i++) {
      if (list[i].contains(active) || list[i].classList.contains("is-current")) return i;
    }
    return -1;
  }

  function moveRow(delta) {
    var list = rows();
    if (!list.length) return false;
    var index = currentIndex(list);
    index = index < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.min(Math.max(index + delta, 0), list.length - 1);
    list.forEach(function (row, i) { row.classList.toggle("is-current", i === index); });
    return focus(list[index].querySelector("[data-queue-link]"));
  }

  function tickRow() {
    var list = rows();
    if (!list.length) return false;
    var index = currentIndex(list);
    if (index < 0) { moveRow(1); index = 0; }
    var box = list[index].querySelector('input[type="checkbox"][name="ids"]');
    if (!box) return false; // a read-only role has no bulk form
    box.click(); // a click, so change listeners and the form see it as the reviewer's own
    return true;
  }

  function openRow() {
    var list = rows();
    var index = currentIndex(list);
    return index >= 0 && follow(list[index].querySelector("[data-queue-link]"));
  }

  // --- the help dialog -----------------------------------------------------------------

  function openHelp() {
    var dialog = document.getElementById("keys-help");
    if (!dialog || dialog.open || typeof dialog.showModal !== "function") return false;
    dialog.showModal();
    return true;
  }

  document.addEventListener("click", function (event) {
    var opener = event.target instanceof Element ? event.target.closest("[data-keys-help]") : null;
    if (opener) { event.preventDefault(); openHelp(); }
  });

  // --- the keys ----------------------------------------------------------------------------

  function decisionShortcut(event) {
    // Ctrl/Cmd+Enter in a decision comment: press that form's "& next" button.
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return false;
    var form = event.target instanceof Element ? event.target.closest("form.action-form") : null;
    var button = form && (form.querySelector('button[name="next"]') || form.querySelector('button[type="submit"]'));
    if (!button) return false;
    button.click(); // a click, so the browser's validation and htmx's submitter both apply
    return true;
  }

  var actions = {
    "j": function () { return moveRow(1) || follow(key("next-item")); },
    "k": function () { return moveRow(-1) || follow(key("prev-item")); },
    "o": function () { return openRow(); },
    "x": function () { return tickRow(); },
    "Enter": function (event) {
      // A focused link or button does its own thing on Enter.
      if (event.target instanceof Element && event.target.closest("a, button, summary, dialog")) return false;
      return openRow();
    },
    "a": function () { return focus(key("approve")); },
    "r": function () { return focus(key("reject")); },
    "e": function () {
      var details = key("edit");
      if (!details) return false;
      details.open = true;
      return focus(details.querySelector("textarea"));
    },
    "w": function () {
      var summary = document.getElementById("withhold"); // the file history's withhold form
      var details = summary && summary.closest("details");
      if (details) { details.open = true; return focus(details.querySelector("textarea")); }
      return follow(key("withhold"));
    },
    "?": function () { return openHelp(); }
  };

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented) return;
    if (typing(event.target)) {
      if (decisionShortcut(event)) event.preventDefault();
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (document.querySelector("dialog[open]")) return; // the dialog has the keyboard
    var action = actions[event.key];
    if (action && action(event)) event.preventDefault();
  });

  // --- focus after a decision --------------------------------------------------------------

  // "Approve & next" reloads the page (it works without JavaScript too);
  // remember to put focus on the next item when it arrives.
  document.addEventListener("submit", function (event) {
    var submitter = event.submitter;
    if (submitter && submitter.name === "next") {
      try { window.sessionStorage.setItem(FOCUS_FLAG, "1"); } catch (e) { /* storage off: no focus help */ }
    }
  }, true);

  function focusAfterArrival() {
    var wanted = false;
    try {
      wanted = window.sessionStorage.getItem(FOCUS_FLAG) === "1";
      window.sessionStorage.removeItem(FOCUS_FLAG);
    } catch (e) { return; }
    if (!wanted) return;
    if (document.getElementById("proposal-title")) { focus(document.getElementById("proposal-title")); return; }
    if (!moveRow(1)) focus(document.querySelector("main h1"));
  }

  // A decision swapped in place by htmx: focus where the reviewer goes next.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "decision") return;
    // An outerHTML swap replaced the target: look the new panel up again.
    var panel = document.getElementById("decision");
    if (!panel) return;
    focus(panel.querySelector("#next-after-decision") || panel.querySelector("[role=alert]") ||
          panel.querySelector("h2"));
  });

  // Phones read a unified diff: side by side would halve the text. Only
  // when the reviewer did not choose a layout (?view=…) themselves.
  function unifiedOnPhones() {
    if (!window.matchMedia || !window.matchMedia("(max-width: 700px)").matches) return;
    if (/[?&]view=/.test(window.location.search)) return;
    var unified = document.querySelector('#diff .toggle a[href*="view=unified"]:not([aria-current])');
    if (unified) unified.click();
  }

  function start() {
    unifiedOnPhones();
    document.querySelectorAll("[data-keys-help]").forEach(function (button) { button.hidden = false; });
    if (window.location.hash === "#withhold") {
      // After the browser's own fragment scroll, which moves focus to <body>.
      window.addEventListener("load", function () { window.setTimeout(actions.w, 0); });
    }
    focusAfterArrival();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
