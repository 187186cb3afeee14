/* The course's website. Search results: a snippet shows a formula as plain text (√d_model, not
   the TeX source \(\sqrt{d_{\text{model}}}\)). Sphinx's search builds a snippet from the page's
   text, where a formula is still its TeX. */
(function () {
  var symbols = {sqrt: "√", times: "×", cdot: "·", ldots: "…", dots: "…", to: "→", le: "≤",
                 ge: "≥", approx: "≈", infty: "∞", pm: "±", alpha: "α", beta: "β", gamma: "γ",
                 epsilon: "ε", lambda: "λ", pi: "π", rho: "ρ", sigma: "σ", theta: "θ"};
  function plain(tex) {
    return tex.replace(/^\\[(\[]|\\[)\]]$/g, "")
              .replace(/\\(?:text|mathrm|mathbf|operatorname|textbf|mathit)\{([^{}]*)\}/g, "$1")
              .replace(/\\([A-Za-z]+)/g, function (m, name) { return symbols[name] || ""; })
              .replace(/[{}]|\\[,;! ]/g, "");
  }
  function install() {
    // searchtools.js declares Search with const: a global name, not a property of window
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.course) return;
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math").forEach(function (m) { m.textContent = plain(m.textContent); });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search.htmlToText.course = true;
  }
  install();
  document.addEventListener("DOMContentLoaded", install);
})();
