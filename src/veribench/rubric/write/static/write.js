// Autosave for the arm-B editor. Saves the whole draft to the JSON API after a pause in
// typing, at least every few seconds while typing, and at once around a paste (the text
// before the paste and the pasted result are saved as two revisions, so a pasted block is
// one step of its own). The server keeps every revision with its own clock; this script
// only decides when to send. Without JavaScript the Save button posts the same form.
(function () {
  "use strict";
  var form = document.getElementById("draft-form");
  if (!form) { return; }
  var area = document.getElementById("draft");
  var status = document.getElementById("autosave-status");
  var count = document.getElementById("word-count");
  var evidence = document.getElementById("evidence-line");
  var toSubmit = document.getElementById("to-submit");
  var api = form.getAttribute("data-api");
  var csrf = form.querySelector("input[name=csrf_token]").value;
  var pauseMs = parseInt(form.getAttribute("data-pause-ms"), 10) || 1500;
  var maxMs = parseInt(form.getAttribute("data-max-ms"), 10) || 10000;
  var base = parseInt(form.getAttribute("data-base"), 10) || 0;
  var saved = area.value;
  var queue = [];
  var busy = false;
  var broken = false;
  var pauseTimer = null;
  var firstDirty = null;

  // Tokens are cut at the server's blank characters (white space, invisible and blank-looking
  // characters: veribench.text.words.tokens), sent as a character class in data-word-blank.
  var blank = form.getAttribute("data-word-blank");
  var sep = blank ? new RegExp("[" + blank + "]+", "u") : /\s+/;
  function words(t) {
    var n = 0;
    t.split(sep).forEach(function (tok) { if (/[\p{L}\p{N}]/u.test(tok)) { n += 1; } });
    return n;
  }
  function show(msg) { status.textContent = msg; }
  function enqueue(text) { queue.push(text); pump(); }
  function pump() {
    if (busy || broken || queue.length === 0) { return; }
    var text = queue.shift();
    if (text === saved) { pump(); return; }
    busy = true;
    show("saving…");
    fetch(api, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
      body: JSON.stringify({text: text, base: base})
    }).then(function (r) {
      return r.json().then(function (body) { return {ok: r.ok, status: r.status, body: body}; });
    }).then(function (res) {
      busy = false;
      if (res.ok) {
        base = res.body.revision;
        saved = text;
        form.querySelector("input[name=base]").value = String(base);
        show("saved " + new Date().toLocaleTimeString() + " (revision " + base + ")");
        if (evidence && res.body.evidence_line) { evidence.textContent = res.body.evidence_line; }
        pump();
      } else {
        broken = res.status === 409 || res.status === 401 || res.status === 403;
        show("not saved: " + (res.body.error || res.status) + (broken ? "" : " (will retry)"));
        if (!broken) { queue.unshift(text); setTimeout(pump, 3000); }
      }
    }).catch(function () {
      busy = false;
      show("not saved: no connection (will retry)");
      queue.unshift(text);
      setTimeout(pump, 3000);
    });
  }
  function flush() {
    clearTimeout(pauseTimer);
    pauseTimer = null;
    firstDirty = null;
    enqueue(area.value);
  }
  area.addEventListener("input", function () {
    count.textContent = String(words(area.value));
    if (firstDirty === null) { firstDirty = Date.now(); }
    clearTimeout(pauseTimer);
    if (Date.now() - firstDirty >= maxMs) { flush(); return; }
    pauseTimer = setTimeout(flush, pauseMs);
  });
  area.addEventListener("paste", function () {
    if (area.value !== saved) { flush(); }          // what was typed before the paste
    setTimeout(function () { count.textContent = String(words(area.value)); flush(); }, 0);  // the paste
  });
  form.addEventListener("submit", function (ev) { ev.preventDefault(); flush(); });
  if (toSubmit) {
    toSubmit.addEventListener("click", function (ev) {
      if (area.value === saved && !busy && queue.length === 0) { return; }
      ev.preventDefault();
      flush();
      var wait = setInterval(function () {
        if (!busy && queue.length === 0) {
          clearInterval(wait);
          if (area.value === saved) { window.location.href = toSubmit.href; }
        }
      }, 100);
    });
  }
  window.addEventListener("beforeunload", function (ev) {
    if (area.value !== saved) { flush(); ev.preventDefault(); ev.returnValue = ""; }
  });
}());
