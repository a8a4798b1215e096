// faultline ui: progressive enhancement only; every page works without it.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var all = document.getElementById("select-all");
  var rows = Array.prototype.slice.call(document.querySelectorAll("input.row"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll("button.needs-selection"));
  function update() {
    var any = rows.some(function (r) { return r.checked; });
    buttons.forEach(function (b) { b.disabled = !any; });
  }
  if (all) {
    all.addEventListener("change", function () {
      rows.forEach(function (r) { r.checked = all.checked; });
      update();
    });
  }
  rows.forEach(function (r) { r.addEventListener("change", update); });
  update();
  var payload = document.getElementById("edit-payload");
  var form = document.getElementById("edit-form");
  if (payload && form) {
    form.addEventListener("submit", function (ev) {
      try {
        JSON.parse(payload.value);
        payload.setCustomValidity("");
      } catch (e) {
        ev.preventDefault();
        payload.setCustomValidity("not valid JSON: " + e.message);
        payload.reportValidity();
      }
    });
    payload.addEventListener("input", function () { payload.setCustomValidity(""); });
  }
});
