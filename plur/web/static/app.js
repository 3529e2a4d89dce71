// plur local page: the only script. No inline handlers (the CSP forbids them).
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form && form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
document.addEventListener("keydown", function (event) {
  // "/" focuses the first search box, as on many sites.
  if (event.key !== "/" || /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) return;
  var box = document.querySelector('input[type="search"]');
  if (box) { event.preventDefault(); box.focus(); }
});
