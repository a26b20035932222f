// The rubric's consistency rule, checked in the browser before a reading is sent.
// The rule itself is data from veribench.rubric.rules.MAX_SCORE_BY_FAULTS, rendered into
// #score-limit[data-rule] as "faults:max_score,..."; the server checks the same rule again.
(function () {
  "use strict";
  var form = document.getElementById("rating-form");
  var status = document.getElementById("score-limit");
  if (!form || !status) { return; }
  var table = status.getAttribute("data-rule").split(",").map(function (p) {
    var kv = p.split(":");
    return [parseInt(kv[0], 10), parseInt(kv[1], 10)];
  }).sort(function (a, b) { return a[0] - b[0]; });

  function cap(faults) {
    var best = table[0][1];
    table.forEach(function (kv) { if (faults >= kv[0]) { best = kv[1]; } });
    return best;
  }

  function counts() {
    var dropped = form.querySelectorAll("input[name=found]:not(:checked)").length;
    var invented = {};
    form.querySelectorAll("input[name=mark]:checked").forEach(function (el) {
      var parts = el.value.split(":");
      if (parts[1] === "invented_fact") { invented[parts[0]] = true; }
    });
    return { dropped: dropped, invented: Object.keys(invented).length };
  }

  function update() {
    var c = counts();
    var max = cap(c.dropped + c.invented);
    var plural = function (n, one, many) { return n + " " + (n === 1 ? one : many); };
    status.textContent = "This reading: " + plural(c.dropped, "dropped claim", "dropped claims") + ", " +
      plural(c.invented, "invented fact", "invented facts") + ", so the meaning score can be at most " + max + ".";
    status.setAttribute("data-max", String(max));
    form.querySelectorAll("input[name=score]").forEach(function (el) {
      var over = parseInt(el.value, 10) > max;
      var label = el.closest("label");
      if (label) { label.classList.toggle("over-limit", over); }
      el.setCustomValidity(over && el.checked ?
        "With " + plural(c.dropped, "dropped claim", "dropped claims") + " and " +
        plural(c.invented, "invented fact", "invented facts") + " the rubric allows at most " + max + "." : "");
    });
  }

  form.addEventListener("change", update);
  form.addEventListener("submit", function (ev) {
    update();
    if (!form.checkValidity()) { ev.preventDefault(); form.reportValidity(); }
  });
  update();
})();
