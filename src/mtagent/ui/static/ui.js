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
