// Lasso dashboard: copy buttons and small progressive enhancements. No
// inline script anywhere (the CSP forbids it).
(function () {
  "use strict";
  function copyText(text, btn) {
    var done = function () {
      var old = btn.textContent;
      btn.textContent = "Copied";
      btn.setAttribute("aria-live", "polite");
      setTimeout(function () { btn.textContent = old; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
    } else {
      fallback(text);
      done();
    }
  }
  function fallback(text) {
    var ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.className = "offscreen";
    document.body.appendChild(ta);
    ta.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing */ }
    document.body.removeChild(ta);
  }
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("[data-copy]");
    if (!btn) return;
    var src = document.querySelector(btn.getAttribute("data-copy"));
    if (src) copyText(src.textContent.trim(), btn);
  });
  // Mapping form: show the "new property" fields only when chosen.
  function syncNewProp(sel) {
    var box = document.getElementById(sel.getAttribute("data-newprop"));
    if (box) box.hidden = sel.value !== "_new";
  }
  document.addEventListener("change", function (ev) {
    if (ev.target.matches && ev.target.matches("select[data-newprop]")) syncNewProp(ev.target);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("select[data-newprop]").forEach(syncNewProp);
  });
})();
