"""Open the built website in headless Chromium and check what a reader's browser shows.

    .venv/bin/python tests/site_browser.py           # check _site/ (built first if missing)
    .venv/bin/python tests/site_browser.py --build   # rebuild _site/ first

Needs Debian's Chromium (``apt-get update && apt-get install -y chromium``); as root it runs with
``--no-sandbox``. Every page is opened by a fresh Chromium with an empty profile (a first visit:
nothing in its storage), on a copy of the site served over HTTP on 127.0.0.1 (the server records
every request, and which answered 404). Each page carries two small scripts: one first in its head
records every console message and every uncaught error; one at the end waits for MathJax, opens
every fold, then records how many formulas were typeset (``mjx-container`` elements), the TeX
errors, the images that did not load or have no alt text, every formula whose right edge is clipped
or beyond the screen (a formula wider than the screen must scroll in its own box), and every word of
a table broken inside a word although it fits the page's column. Chromium's ``--dump-dom`` prints
the page after its scripts ran, ``--enable-logging`` its console: any ``console.error``, uncaught
error or message the browser itself logs fails the check. Each page is opened 1,280 pixels wide,
then inside a 390-pixel-wide frame (a phone), where every Colab/Kaggle start button must lie inside
the screen too. The page weight (bytes of every file a first visit loads) is printed per page. The
search page is queried for a term of each notebook and for a known sentence, from ``file://`` and
over HTTP: the expected page must be found, its snippet must hold the matching sentence, no TeX, and
no console error, and its snippets must keep a formula's symbols (ℓ_ref, O(log_w n)). On every page
the probe also checks that printed tables keep their lines (they scroll in their own box), figures
are links to their image, a table that scrolls says so, the search box's magnifier leaves the query
readable, the front page states the data's licence once, and printing hides the buttons and opens
the folds; on a page with explorers (helpers/explorer.py), tests/explorer_probe.js steps through
each by Next, the arrow keys and the slider, and every step must show its stored number, title,
phase, shape and caption, within the screen. Screenshots of the landing page and of notebooks 03
and 09, and of 05's first explorer at steps 1, 6, 12 and 14, 1,280 and 390 pixels wide, go to
``_site_screenshots/``. Exits 1 when a check fails.
"""

import argparse
import functools
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers import course  # noqa: E402
from helpers.course import site  # noqa: E402
from test_explorer import PROBE as EXPLORER_PROBE  # noqa: E402
from test_explorer import driven_failures  # noqa: E402
from test_site import unique_words  # noqa: E402

SHOTS = ROOT / "_site_screenshots"
PHONE_WIDTH = 390
# a query whose sentence we know: its page and the words its snippet must hold
KNOWN = ("closed vocabulary", "09_translation.html",
         "Characters alone would also be a closed vocabulary, with much longer sequences")
# queries whose snippet must keep a formula's symbols (ℓ, log) as plain text
MATHS = [("total length hypotheses references", "09_translation.html",
          "with ℓ_hyp the total length of the hypotheses and ℓ_ref that of the references"),
         ("grow dilated kernels path", "03_encoder_layer.html", "O(n), O(n/w), O(log_w n), O(n/r) and O(1)")]

# first in every page's head: every console message and every uncaught error, from the start
HOOK = r"""<script>
(function () {
  var seen = window.__courseSeen = {console: [], uncaught: []};
  ["log", "info", "debug", "warn", "error"].forEach(function (level) {
    var original = console[level];
    console[level] = function () {
      seen.console.push([level, Array.prototype.map.call(arguments, String).join(" ")]);
      return original.apply(console, arguments);
    };
  });
  window.addEventListener("error", function (e) {
    var t = e.target;
    seen.uncaught.push(t && t !== window && (t.src || t.href)
      ? "failed to load " + (t.src || t.href) : "Uncaught " + e.message);
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    seen.uncaught.push("Uncaught (in promise) " + (e.reason && e.reason.message || e.reason));
  });
})();
</script>"""

PROBE = r"""<script>
document.querySelectorAll("img").forEach(function (img) { img.loading = "eager"; });
var STARTS = 'a[href*="colab.research.google.com"], a[href*="kaggle.com"]';

function formulaSources() {  // each typeset formula's root element -> its TeX
  var sources = new Map();
  try {
    for (var item of MathJax.startup.document.math) sources.set(item.typesetRoot, item.math);
  } catch (e) {}
  return sources;
}

function formulaEdges() {
  // every formula that a reader cannot see whole: cut by a box that hides its overflow, or
  // reaching beyond the screen, unless a box of its own (inside the article) scrolls it
  var bad = [], sources = formulaSources(), width = document.documentElement.clientWidth;
  document.querySelectorAll("mjx-container").forEach(function (m) {
    var body = m.querySelector("mjx-math") || m, r = body.getBoundingClientRect();
    if (!r.width) return;
    var right = r.right, left = r.left, why = null, inArticle = true;
    for (var el = m; el && el !== document.documentElement && !why; el = el.parentElement) {
      var style = getComputedStyle(el), box = el.getBoundingClientRect();
      if (el.tagName === "ARTICLE") inArticle = false;
      var outside = right > box.right + 1 || left < box.left - 1;
      if (!outside) continue;
      if (/hidden|clip/.test(style.overflowX)) why = "clipped by " + el.tagName.toLowerCase() +
          "." + String(el.className).split(" ")[0];
      else if (/auto|scroll/.test(style.overflowX)) {
        if (!inArticle) why = "the page scrolls sideways in " + el.tagName.toLowerCase();
        else { right = Math.min(right, box.right); left = Math.max(left, box.left); }
      }
    }
    if (!why && right > width + 1) why = "beyond the screen's edge";
    if (why) bad.push(Math.round(r.right) + " px, " + why + ": " +
                      (sources.get(m) || m.textContent).slice(0, 70));
  });
  return bad;
}

function brokenWords() {
  // words of a table split over two lines although they would fit on one line of the article's
  // column (a table whose words do not fit the screen scrolls instead)
  var bad = [], article = document.querySelector("article");
  var room = article ? article.clientWidth : document.documentElement.clientWidth;
  document.querySelectorAll("article table td, article table th").forEach(function (cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node;
    while ((node = walker.nextNode())) {
      var re = /[^\s\-\u2010-\u2014\/]{2,}/g, match;
      while ((match = re.exec(node.data))) {
        var range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        var rects = Array.from(range.getClientRects()).filter(function (q) { return q.width > 0; });
        var tops = new Set(rects.map(function (q) { return Math.round(q.top); }));
        var wide = rects.reduce(function (s, q) { return s + q.width; }, 0);
        if (tops.size > 1 && wide <= room + 1) bad.push(match[0]);
      }
    }
  });
  return bad;
}

function wrappedTables() {
  // printed tables (an output whose lines hold columns lined up with spaces) that wrap their lines
  var bad = [];
  var pres = document.querySelectorAll("article div.cell_output pre, article .course-output pre");
  pres.forEach(function (pre) {
    var lines = pre.textContent.split("\n").filter(function (l) { return /\S {2,}\S/.test(l); });
    if (lines.length >= 2 && getComputedStyle(pre).whiteSpace !== "pre") bad.push(lines[0].slice(0, 60));
  });
  return bad;
}

function unlinkedFigures() {  // figures that do not open full size on a tap
  return Array.from(document.querySelectorAll('article img[src*="_images/"]')).filter(function (img) {
    var a = img.closest("a[href]");
    return !a || a.href !== img.src;
  }).map(function (img) { return img.getAttribute("src"); });
}

function silentScrolls() {  // tables wider than their box with no visible cue that they scroll
  var boxes = document.querySelectorAll("article .pst-scrollable-table-container");
  return Array.from(boxes).filter(function (box) {
    if (box.scrollWidth <= box.clientWidth + 1) return false;
    var cue = box.previousElementSibling;
    return !(cue && cue.classList.contains("course-scroll-cue") && !cue.hidden && cue.offsetParent);
  }).map(function (box) { return box.textContent.trim().slice(0, 50); });
}

function coveredQuery() {
  // the search page's query box: its magnifier icon must end before the text starts
  var input = document.querySelector('article input[name="q"], #search-results ~ form input[name="q"]') ||
              Array.from(document.querySelectorAll('input[name="q"]')).filter(function (i) {
                return i.offsetParent; })[0];
  if (!input || !input.value) return null;
  var box = input.closest("form") || input.parentElement;
  var icon = box.querySelector("i, svg, .fa-magnifying-glass, [class*=search-icon]");
  if (!icon || !icon.getBoundingClientRect().width) return null;
  var r = input.getBoundingClientRect(), style = getComputedStyle(input);
  var textStart = r.left + parseFloat(style.paddingLeft) + parseFloat(style.borderLeftWidth);
  var iconRect = icon.getBoundingClientRect();
  var overlaps = iconRect.right > textStart + 0.5 && iconRect.left < textStart + 8 &&
                 iconRect.bottom > r.top && iconRect.top < r.bottom;
  return overlaps ? "icon " + Math.round(iconRect.left) + "-" + Math.round(iconRect.right) +
                    " px, text from " + Math.round(textStart) + " px" : "";
}

function printView() {
  // what printing shows: no button, every fold open (the print stylesheet and course.js)
  var hidden = [];
  Array.from(document.styleSheets).forEach(function (sheet) {
    var rules;
    try { rules = sheet.cssRules; } catch (e) { return; }
    Array.from(rules || []).forEach(function (rule) {
      if (rule.media && /print/.test(rule.media.mediaText)) {
        Array.from(rule.cssRules).forEach(function (r) {
          if (r.style && r.style.display === "none") hidden.push(r.selectorText);
        });
      }
    });
  });
  var buttons = Array.from(document.querySelectorAll(
      "article button, article .course-buttons, article .course-start, .bd-header button"))
    .filter(function (b) { return b.getClientRects().length; })
    .filter(function (b) { return !hidden.some(function (sel) { try { return b.matches(sel); }
                                                                catch (e) { return false; } }); });
  var details = Array.from(document.querySelectorAll("details"));
  var wasOpen = details.map(function (d) { return d.open; });
  details.forEach(function (d) { d.open = false; });
  window.dispatchEvent(new Event("beforeprint"));
  var folded = details.filter(function (d) { return !d.open; }).length;
  window.dispatchEvent(new Event("afterprint"));
  details.forEach(function (d, i) { d.open = wasOpen[i]; });
  return {buttons: buttons.map(function (b) { return b.tagName.toLowerCase() + "." +
                                                     String(b.className).split(" ")[0]; }),
          folded: folded, folds: details.length};
}

window.addEventListener("load", function () {
  function report(extra) {
    var images = Array.from(document.images);
    var maths = Array.from(document.querySelectorAll(".math"));
    var seen = window.__courseSeen || {console: [], uncaught: []};
    var out = document.createElement("pre");
    out.id = "site-probe";
    out.textContent = JSON.stringify(Object.assign({
      images: images.length,
      broken: images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                    .map(function (i) { return i.getAttribute("src"); }),
      formulas: maths.length,
      typeset: document.querySelectorAll("mjx-container").length,
      untypeset: maths.filter(function (m) { return !m.querySelector("mjx-container"); }).length,
      errors: document.querySelectorAll("mjx-merror").length,
      mathjax: !!window.MathJax && !!MathJax.startup,
      no_alt: images.filter(function (i) {
        var alt = (i.getAttribute("alt") || "").trim();
        return !alt || /\.(png|svg|jpe?g)$|^_images\/|^[0-9a-f]{16,}/.test(alt);
      }).map(function (i) { return i.getAttribute("src"); }),
      width: document.documentElement.clientWidth,
      page_width: document.documentElement.scrollWidth,
      clipped: formulaEdges(),
      broken_words: brokenWords(),
      // the start buttons (Colab, Kaggle links) that reach beyond the window's edges
      offscreen: Array.from(document.querySelectorAll(STARTS))
        .filter(function (a) { var r = a.getBoundingClientRect();
                               return r.width > 0 && (r.left < 0 || r.right > window.innerWidth + 0.5); })
        .map(function (a) { var r = a.getBoundingClientRect();
                            return a.textContent.trim() + " " + Math.round(r.left) + "-" +
                                   Math.round(r.right); }),
      starts: document.querySelectorAll(STARTS).length,
      explorer_count: document.querySelectorAll(".tx-explorer").length,
      wrapped_tables: wrappedTables(),
      unlinked_figures: unlinkedFigures(),
      silent_scrolls: silentScrolls(),
      covered_query: coveredQuery(),
      print_view: printView(),
      attributions: ((document.querySelector("article") || {}).textContent || "")
        .split("CC BY 2.0 FR").length - 1,
      explorers: (window.__explorerProbe || {}).explorers || [],
      console: seen.console,
      uncaught: seen.uncaught
    }, extra || {}));
    document.body.appendChild(out);
  }
  function results(tries) {  // the search page's summary says when the search finished
    var items = Array.from(document.querySelectorAll("#search-results li"));
    var found = items.map(function (li) {
      return li.querySelector("a").getAttribute("href").split("?")[0].split("#")[0]; });
    var snippets = {};
    items.forEach(function (li, i) {
      var p = li.querySelector("p.context");
      if (p && !(found[i] in snippets)) snippets[found[i]] = p.textContent;
    });
    var summary = document.querySelector("#search-results .search-summary");
    var done = /finished|did not match/.test(summary ? summary.textContent : "");
    var asked = new URLSearchParams(location.search).get("q");
    if (!asked || (done && Object.keys(snippets).length >= Math.min(found.length, 3)) || tries > 40) {
      report({results: found, snippets: snippets});
    }
    else setTimeout(function () { results(tries + 1); }, 100);
  }
  var typeset = window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve();
  typeset.then(function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
    setTimeout(function () {
      if (document.getElementById("search-results")) results(0); else report();
    }, 200);
  });
});
</script>
"""


# Headless Chromium lays a page out at least 500 pixels wide whatever --window-size says: a phone
# is a 390-pixel-wide frame, whose probe record is copied out.
PHONE = """<!doctype html><html><head><link rel="icon" href="_static/favicon.svg"></head>
<body style="margin:0">
<iframe id="phone" style="width:WIDTHpx;height:2400px;border:0"></iframe>
<script>
document.getElementById("phone").src = (location.search.slice(1) || "index.html") + location.hash;
(function copy() {
  var inner = document.getElementById("phone").contentDocument;
  var seen = inner && inner.getElementById("site-probe");
  if (!seen) { setTimeout(copy, 100); return; }
  var out = document.createElement("pre");
  out.id = "site-probe";
  out.textContent = seen.textContent;
  document.body.appendChild(out);
})();
</script></body></html>
""".replace("WIDTH", str(PHONE_WIDTH))


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            command = [shutil.which(name), "--headless", "--disable-gpu", "--hide-scrollbars",
                       "--disable-quic", "--no-first-run", "--disable-background-networking",
                       "--disable-component-update", "--disable-sync", "--virtual-time-budget=8000"]
            return command + (["--no-sandbox"] if os.geteuid() == 0 else [])
    sys.exit("No Chromium found: apt-get update && apt-get install -y chromium")


def run_browser(browser, *args):
    """Chromium with a fresh, empty profile: every page is a first visit."""
    with tempfile.TemporaryDirectory(prefix="course-chromium-") as profile:
        return subprocess.run([*browser, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=180)


def console_lines(stderr):
    """The console messages Chromium logged (any level: its log does not say which)."""
    return [m[1] for m in re.finditer(r':CONSOLE[^\]]*\] "(.*?)", source: ', stderr)]


def probe(browser, url, width=1280):
    """The probe's record of a page after its scripts ran (None: the probe never reported), and
    the console's errors: every console.error, every uncaught error, and every message the
    browser itself logged (a failed load, a blocked request): any console line that the page's
    own console.log/info/debug/warn did not write."""
    run = run_browser(browser, f"--window-size={width},2400", "--enable-logging=stderr", "--v=0",
                      "--dump-dom", url)
    found = re.search(r'<pre id="site-probe"[^>]*>(.*?)</pre>', run.stdout, re.S)
    record = json.loads(found[1].replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                        .replace("&amp;", "&")) if found else None
    logged = (record or {}).get("console", [])
    quiet = [text for level, text in logged if level != "error"]
    errors = [text for level, text in logged if level == "error"] + (record or {}).get("uncaught", [])
    for line in console_lines(run.stderr):
        if not any(text.startswith(line[:60]) or line.startswith(text[:60]) for text in quiet + errors):
            errors.append(line)
    if record is None:
        errors += [line for line in console_lines(run.stderr) if line not in errors]
    return record, errors


def with_probes(site_dir, tmp, probes=True):
    """A copy of the site with the phone frame, whose pages carry the two probe scripts."""
    copy = pathlib.Path(tmp) / ("site" if probes else "plain")
    shutil.copytree(site_dir, copy)
    for page in copy.glob("*.html") if probes else []:
        text = page.read_text()
        text = re.sub(r"<head>", lambda m: m[0] + HOOK, text, count=1)
        drive = f"<script>{EXPLORER_PROBE.read_text()}</script>" if "tx-explorer" in text else ""
        page.write_text(text.replace("</body>", drive + PROBE + "</body>"))
    (copy / "phone.html").write_text(PHONE)
    return copy


class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the folder quietly and remembers every path asked for, and those that answered 404."""
    missing = []
    asked = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.asked.append(self.path)
        super().do_GET()

    def send_error(self, code, *args, **kwargs):
        if code == 404:
            self.missing.append(self.path)
        super().send_error(code, *args, **kwargs)


def serve(folder):
    """A local HTTP server for folder on 127.0.0.1 (a free port), in a thread; returns it, the
    list of paths that answered 404 and the list of every path asked for."""
    missing, asked = [], []
    recording = type("Handler", (RecordingHandler,), {"missing": missing, "asked": asked})
    handler = functools.partial(recording, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, missing, asked


def weight(site_dir, paths):
    """The bytes of the site's files behind these request paths (as built, without the probes)."""
    total = 0
    for path in set(paths):
        file = site_dir / urllib.parse.unquote(urllib.parse.urlsplit(path).path).lstrip("/")
        if file.is_file():
            total += file.stat().st_size
    return total


def search_terms():
    """For each notebook, a word of its text that no other notebook has, and its page."""
    return [(unique_words(stem)[0], f"{stem}.html") for stem, *_ in course.NOTEBOOKS]


def holds_term(snippet, term):
    """The snippet holds the word (or a word it starts, as the search's stemming finds it)."""
    stem = term.lower()[:max(4, len(term) - 3)]
    return stem in snippet.lower()


def check_page(browser, base, page, width, failures):
    """Open one page (width 1,280: directly; 390: inside the phone frame); returns its record."""
    url = f"{base}/{page}" if width != PHONE_WIDTH else f"{base}/phone.html?{page}"
    seen, errors = probe(browser, url)
    where = f"{page} at {width} px"
    if seen is None:
        failures.append(f"{where}: the probe did not report (scripts did not run?) {errors[:3]}")
        return None
    if seen["untypeset"] or seen["errors"] or (seen["formulas"] and not seen["typeset"]):
        failures.append(f"{where}: {seen['untypeset']} formulas not typeset, {seen['errors']} TeX errors")
    if seen["broken"]:
        failures.append(f"{where}: images not loaded: {seen['broken']}")
    if seen["no_alt"]:
        failures.append(f"{where}: images without alt text: {seen['no_alt']}")
    failures += [f"{where}: formula not whole: {c}" for c in seen["clipped"]]
    failures += [f"{where}: a printed table wraps its lines: {t!r}" for t in seen["wrapped_tables"]]
    failures += [f"{where}: a figure does not open full size: {f}" for f in seen["unlinked_figures"]]
    failures += [f"{where}: a table scrolls with no cue: {t!r}" for t in seen["silent_scrolls"]]
    if seen["covered_query"]:
        failures.append(f"{where}: the magnifier covers the query: {seen['covered_query']}")
    if seen["print_view"]["buttons"]:
        failures.append(f"{where}: printing keeps buttons: {sorted(set(seen['print_view']['buttons']))[:5]}")
    if seen["print_view"]["folded"]:
        failures.append(f"{where}: printing leaves {seen['print_view']['folded']} of "
                        f"{seen['print_view']['folds']} folds closed")
    if page == "index.html" and seen["attributions"] != 1:
        failures.append(f"{where}: the data's licence (CC BY 2.0 FR) is stated {seen['attributions']} times")
    if len(seen["explorers"]) != seen["explorer_count"]:
        failures.append(f"{where}: {seen['explorer_count']} explorers, {len(seen['explorers'])} driven")
    for explorer in seen["explorers"]:
        failures += [f"{where}: explorer {explorer['id']}: {bad}" for bad in driven_failures(explorer)]
    failures += [f"{where}: console error: {e}" for e in errors]
    if width == PHONE_WIDTH:
        if seen["width"] != PHONE_WIDTH:
            failures.append(f"{where}: the frame is {seen['width']} px wide")
        if seen["page_width"] > seen["width"] + 1:
            failures.append(f"{where}: the page is {seen['page_width']} px wide")
        failures += [f"{where}: start button beyond the screen: {o}" for o in seen["offscreen"]]
        if seen["broken_words"]:
            failures.append(f"{where}: {len(seen['broken_words'])} words of a table broken mid-letter: "
                            f"{seen['broken_words'][:8]}")
    seen["console_errors"] = errors
    return seen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="rebuild the site first")
    parser.add_argument("--site", type=pathlib.Path, default=site.OUT)
    parser.add_argument("--no-screenshots", action="store_true")
    args = parser.parse_args(argv)
    if args.build or not (args.site / "index.html").exists():
        site.build(args.site)
    browser = chromium()
    failures = []
    pages = ["index.html"] + [f"{stem}.html" for stem, *_ in course.NOTEBOOKS] + ["notation.html",
                                                                                    "search.html"]
    with tempfile.TemporaryDirectory(prefix="course-site-check-") as tmp:
        copy = with_probes(args.site, tmp)
        server, missing, asked = serve(copy)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            print(f"{'page':30} {'formulas':>8} {'typeset':>7} {'clipped 1280/390':>16} {'images':>6} "
                  f"{'loaded':>6} {'no alt':>6} {'broken words':>12} {'errors':>6} {'files':>5} "
                  f"{'weight':>9}")
            weights = {}
            for page in pages:
                before = len(asked)
                wide = check_page(browser, base, page, 1280, failures)
                requests = asked[before:]
                phone = check_page(browser, base, page, PHONE_WIDTH, failures)
                if wide is None or phone is None:
                    continue
                weights[page] = weight(args.site, requests)
                fonts = sorted({r for r in requests if "fontawesome" in r})
                if fonts:  # the theme's icon font: the site draws its few icons from a small stylesheet
                    failures.append(f"{page}: the icon font loads: {fonts}")
                loaded = wide["images"] - len(wide["broken"])
                errors = len(wide["console_errors"]) + len(phone["console_errors"])
                print(f"{page:30} {wide['formulas']:>8} {wide['typeset']:>7} "
                      f"{len(wide['clipped']):>7}/{len(phone['clipped']):<8} {wide['images']:>6} "
                      f"{loaded:>6} {len(wide['no_alt']):>6} {len(phone['broken_words']):>12} "
                      f"{errors:>6} {len(set(requests)):>5} {weights[page] / 1e6:>7.2f} MB")
                if wide["explorers"]:
                    print(f"{'':30} {len(wide['explorers'])} explorers, "
                          f"{sum(len(e['data']['steps']) for e in wide['explorers'])} steps, each reached by "
                          f"Next, the keys and the slider at 1,280 and {PHONE_WIDTH} px")
                if page == "index.html":
                    print(f"{'':30} at {phone['width']} px: {phone['starts']} start buttons, "
                          f"{len(phone['offscreen'])} beyond the screen's edge")
                    if not phone["starts"]:
                        failures.append("index.html at 390 px: no start button")
            if weights:
                print(f"page weight (a first visit, every file it loads): "
                      f"{min(weights.values()) / 1e6:.2f}-{max(weights.values()) / 1e6:.2f} MB, "
                      f"landing page {weights.get('index.html', 0) / 1e6:.2f} MB")
            queries = [(term, expected, None) for term, expected in search_terms()] + [KNOWN, *MATHS]
            for query, expected, sentence in queries:
                for where, root in (("file", (copy / "search.html").resolve().as_uri()),
                                    ("http", f"{base}/search.html")):
                    seen, errors = probe(browser, f"{root}?q={urllib.parse.quote(query)}")
                    found = (seen or {}).get("results", [])
                    snippet = (seen or {}).get("snippets", {}).get(expected, "")
                    tex = [s for s in (seen or {}).get("snippets", {}).values()
                           if re.search(r"\\[(a-zA-Z]|\$", s)]
                    holds = (" ".join(sentence.split()) in " ".join(snippet.split()) if sentence
                             else all(holds_term(snippet, w) for w in query.split()))
                    print(f"search {query!r} from {where}: {len(found)} pages, {expected} "
                          f"{'found' if expected in found else 'MISSING'}, snippet "
                          f"{'holds the sentence' if holds else 'WITHOUT THE MATCH'}: "
                          f"{' '.join(snippet.split())[:90]!r}, {len(errors)} console errors")
                    if expected not in found:
                        failures.append(f"search {query!r} from {where} does not find {expected}")
                    elif not holds:
                        failures.append(f"search {query!r} from {where}: {expected}'s snippet does not "
                                        f"hold the match: {snippet[:120]!r}")
                    if tex:
                        failures.append(f"search {query!r}: TeX in a snippet: {tex[0][:100]!r}")
                    if (seen or {}).get("covered_query"):
                        failures.append(f"search {query!r} from {where}: the magnifier covers the query: "
                                        f"{seen['covered_query']}")
                    failures += [f"search {query!r} from {where}: console error: {e}" for e in errors]
        finally:
            server.shutdown()
        print(f"{len(missing)} requests answered 404 {sorted(set(missing))[:5]}")
        failures += [f"404: {path}" for path in sorted(set(missing))]
        if not args.no_screenshots:
            screenshots(browser, with_probes(args.site, tmp, probes=False), failures)
    print("\n".join(["", *failures]) if failures else "\nall browser checks passed")
    return 1 if failures else 0


def screenshots(browser, copy, failures):
    """The landing page and notebooks 03 and 09 at 1,280 pixels and on the phone (390), as a
    reader first sees them (copy: the site without the probes, with the phone frame)."""
    SHOTS.mkdir(exist_ok=True)
    for page in ["index.html", "03_encoder_layer.html", "09_translation.html"]:
        for width in (1280, PHONE_WIDTH):
            shot = SHOTS / page.replace(".html", f"_{width}.png")
            url = (copy / page).resolve().as_uri() if width != PHONE_WIDTH else \
                f"{(copy / 'phone.html').resolve().as_uri()}?{page}"
            run_browser(browser, f"--window-size={width},{2400 if width == PHONE_WIDTH else 2000}",
                        f"--screenshot={shot}", url)
            print(f"screenshot {shot.relative_to(ROOT)}" if shot.exists() else f"no screenshot of {page}")
            if not shot.exists():
                failures.append(f"no screenshot of {page} at {width} px")
    for step, page in explorer_pages(copy, "05_training_recipe.html", (1, 6, 12, 14)):
        for width in (1280, PHONE_WIDTH):
            shot = SHOTS / f"05_explorer_step{step}_{width}.png"
            url = (copy / page).resolve().as_uri() if width != PHONE_WIDTH else \
                f"{(copy / 'phone.html').resolve().as_uri()}?{page}"
            run_browser(browser, f"--window-size={width},{1000 if width == PHONE_WIDTH else 900}",
                        f"--screenshot={shot}", url)
            if not shot.exists():
                failures.append(f"no screenshot of 05's explorer, step {step}, at {width} px")
    print("screenshots of 05's first explorer at steps 1, 6, 12 and 14, 1,280 and 390 pixels wide")


def explorer_pages(copy, page, steps):
    """For each step, a copy of the page (its theme and styles) whose article holds only its first
    explorer, opened at that step by clicking Next (a screenshot ignores the address's fragment)."""
    text = (copy / page).read_text()
    found = re.search(r'<div class="tx-explorer".*?</script></div>', text, re.S)
    if not found:
        return []
    start, end = text.index("<article"), text.index("</article>")
    body = text[:text.index(">", start) + 1] + found[0] + text[end:]
    made = []
    for step in steps:
        click = ("<script>window.addEventListener('load', function () { for (var i = 1; i < " + str(step)
                 + "; i++) document.querySelector('.tx-next').click(); });</script>")
        name = f"explorer_step{step}.html"
        (copy / name).write_text(body.replace("</body>", click + "</body>"))
        made.append((step, name))
    return made


if __name__ == "__main__":
    sys.exit(main())
