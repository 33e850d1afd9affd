// mtagent explain UI: the only script. Filters the sessions table as you type (the search form
// still works without it). Reads text with textContent only; never writes HTML.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var box = document.getElementById("session-filter");
  if (!box) { return; }
  box.addEventListener("input", function () {
    var q = box.value.trim().toLowerCase();
    document.querySelectorAll("tr.session-row").forEach(function (row) {
      var hay = row.getAttribute("data-search") || "";
      row.classList.toggle("hidden", q !== "" && hay.indexOf(q) === -1);
    });
  });
});
// The replay form: a replay takes seconds of CPU and the page answers only when it is done, so say
// at once that it runs, for how long, and over what (textContent only).
document.addEventListener("DOMContentLoaded", function () {
  var form = document.querySelector("form.replay");
  var status = document.getElementById("replay-status");
  if (!form || !status) { return; }
  form.addEventListener("submit", function () {
    var source = form.querySelector("select[name=source]");
    var chosen = form.querySelectorAll("input[name=strategy]:checked").length;
    var what = source && source.selectedIndex > 0 ? source.options[source.selectedIndex].textContent : "the trajectory";
    var started = Date.now();
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = true; }
    var show = function () {
      var seconds = Math.floor((Date.now() - started) / 1000);
      status.textContent = "replaying " + what + " with " + chosen + " strateg" + (chosen === 1 ? "y" : "ies") +
        " … " + seconds + " s (every recorded model call, each strategy; the page appears when all are done)";
    };
    show();
    status.hidden = false;
    window.setInterval(show, 1000);
  });
});
