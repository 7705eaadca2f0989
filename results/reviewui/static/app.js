// rebound ui: the little script the pages use. No inline script anywhere
// (the Content Security Policy allows only this file).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // A side-by-side page opens at its first divergence: scroll to it and
  // give it the keyboard focus (the row has tabindex=-1).
  var first = document.getElementById("first-divergence");
  if (first && (location.hash === "" || location.hash === "#first-divergence")) {
    first.scrollIntoView({ block: "center" });
    first.focus({ preventScroll: true });
  }
  // Remember the reviewer's name between verdicts (in this browser only).
  var who = document.getElementById("reviewer");
  if (who && window.localStorage) {
    if (!who.value) { who.value = localStorage.getItem("rebound-reviewer") || ""; }
    who.form.addEventListener("submit", function () { localStorage.setItem("rebound-reviewer", who.value); });
  }
});
