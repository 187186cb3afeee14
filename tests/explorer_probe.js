// Drives every explorer (helpers/explorer.py) on a page the way a reader does and writes what it
// saw as JSON into a hidden PRE element whose id is explorer-probe, for Chromium's --dump-dom: all
// steps by Next, by the slider and by the arrow keys, each shown step's number, shape and caption,
// the address fragment, the widest element and the tallest step. tests/test_explorer.py and
// tests/site_browser.py read it.
(function () {
  function run() {
    var found = [];
    var roots = document.querySelectorAll(".tx-explorer");
    for (var r = 0; r < roots.length; r++) found.push(drive(roots[r]));
    var pre = document.createElement("pre");
    pre.id = "explorer-probe";
    pre.style.display = "none";
    window.__explorerProbe = {explorers: found, width: window.innerWidth,
                              errors: window.__explorerErrors || []};
    pre.textContent = JSON.stringify(window.__explorerProbe);
    document.body.appendChild(pre);
  }
  function shown(root) {
    var lis = root.querySelectorAll(".tx-step"), out = [];
    for (var i = 0; i < lis.length; i++) {
      if (!lis[i].hidden && lis[i].getClientRects().length) {
        out.push({n: +lis[i].getAttribute("data-step"),
                  shape: lis[i].querySelector(".tx-shape").textContent,
                  caption: lis[i].querySelector(".tx-caption").textContent,
                  title: lis[i].querySelector(".tx-name").textContent,
                  phase: lis[i].getAttribute("data-phase")});
      }
    }
    return out;
  }
  function key(root, name) {
    root.dispatchEvent(new KeyboardEvent("keydown", {key: name, bubbles: true}));
  }
  function tooWide(root) {
    var limit = document.documentElement.clientWidth + 1, wide = [];
    var all = root.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      var box = all[i].closest(".tx-box");
      if (box && box !== all[i]) continue;          // inside its own scrolling box
      var rect = all[i].getBoundingClientRect();
      if (rect.width && rect.right > limit) wide.push(all[i].tagName + "." + all[i].className);
    }
    return wide;
  }
  function drive(root) {
    var data = JSON.parse(root.querySelector("script.tx-data").textContent);
    var n = data.steps.length, seen = {id: root.id, data: data, live: root.classList.contains("tx-live")};
    var next = root.querySelector(".tx-next"), prev = root.querySelector(".tx-prev");
    var slider = root.querySelector(".tx-controls input[type=range]");
    seen.first = shown(root);
    seen.next = [];
    seen.wide = [];
    seen.tallest = 0;
    seen.hashes = [];
    if (!next) return seen;
    for (var i = 0; i < n; i++) {
      if (i) next.click();
      seen.next.push(shown(root));
      seen.hashes.push(location.hash);
      seen.tallest = Math.max(seen.tallest, root.getBoundingClientRect().height);
      seen.wide = seen.wide.concat(tooWide(root));
    }
    seen.nextDisabledAtEnd = next.disabled;
    seen.keysBack = [];
    for (i = n - 1; i > 0; i--) {
      key(root, "ArrowLeft");
      seen.keysBack.push(shown(root));
    }
    seen.prevDisabledAtStart = prev.disabled;
    seen.keysForward = [];
    for (i = 1; i < n; i++) {
      key(root, "ArrowRight");
      seen.keysForward.push(shown(root));
    }
    seen.slider = [];
    for (i = n; i >= 1; i--) {
      slider.value = i;
      slider.dispatchEvent(new Event("input", {bubbles: true}));
      seen.slider.push(shown(root));
    }
    var phases = root.querySelectorAll(".tx-phases button");
    seen.phases = [];
    for (i = 0; i < phases.length; i++) {
      phases[i].click();
      seen.phases.push([phases[i].textContent, shown(root)]);
    }
    var rowButton = root.querySelector("button.tx-row");
    if (rowButton) {
      var li = rowButton.closest(".tx-step");
      slider.value = li.getAttribute("data-step");
      slider.dispatchEvent(new Event("input", {bubbles: true}));
      rowButton.click();
      var reads = rowButton.closest(".tx-box").querySelector(".tx-reads");
      seen.click = {step: +li.getAttribute("data-step"), row: rowButton.textContent,
                    reads: reads.textContent, spans: reads.querySelectorAll("span").length,
                    sources: reads.querySelectorAll("span.tx-src").length};
    }
    slider.value = 1;
    slider.dispatchEvent(new Event("input", {bubbles: true}));
    return seen;
  }
  if (document.readyState === "complete") setTimeout(run, 50);
  else window.addEventListener("load", function () { setTimeout(run, 50); });
})();
