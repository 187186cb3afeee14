"""Open the built website in headless Chromium and check what a reader's browser shows.

    .venv/bin/python tests/site_browser.py           # check _site/ (built first if missing)
    .venv/bin/python tests/site_browser.py --build   # rebuild _site/ first

Needs Debian's Chromium (``apt-get update && apt-get install -y chromium``); as root it runs
with ``--no-sandbox``. On a copy of the site served over HTTP on 127.0.0.1 (the server records
every request that answers 404), each page gets a small probe script that waits for MathJax, then
records how many formulas were typeset (``mjx-container`` elements), how many TeX errors there
were, which images did not load and which have no alt text; Chromium's ``--dump-dom`` prints the
page after its scripts ran, and ``--enable-logging`` its console, where an ``Uncaught`` error fails
the check. The landing page is opened again 390 pixels wide: every Colab/Kaggle start button must
lie inside the window. The search page is queried for a term of each notebook, from ``file://``
and over HTTP; its snippets must show no TeX source. Screenshots of the landing page and of
notebooks 03 and 09, 1,280 and 390 pixels wide, go to ``_site_screenshots/``. Exits 1 when a
check fails.
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

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers import course  # noqa: E402
from helpers.course import site  # noqa: E402
from test_site import unique_words  # noqa: E402

SHOTS = ROOT / "_site_screenshots"
PROBE = r"""<script>
document.querySelectorAll("img").forEach(function (img) { img.loading = "eager"; });
var STARTS = 'a[href*="colab.research.google.com"], a[href*="kaggle.com"]';
window.addEventListener("load", function () {
  function report(extra) {
    var images = Array.from(document.images);
    var maths = Array.from(document.querySelectorAll(".math"));
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
      no_alt: images.filter(function (i) {
        var alt = (i.getAttribute("alt") || "").trim();
        return !alt || /\.(png|svg|jpe?g)$|^_images\/|^[0-9a-f]{16,}/.test(alt);
      }).map(function (i) { return i.getAttribute("src"); }),
      width: window.innerWidth,
      // the start buttons (Colab, Kaggle links) that reach beyond the window's edges
      offscreen: Array.from(document.querySelectorAll(STARTS))
        .filter(function (a) { var r = a.getBoundingClientRect();
                               return r.width > 0 && (r.left < 0 || r.right > window.innerWidth + 0.5); })
        .map(function (a) { var r = a.getBoundingClientRect();
                            return a.textContent.trim() + " " + Math.round(r.left) + "-" +
                                   Math.round(r.right); }),
      starts: document.querySelectorAll(STARTS).length
    }, extra || {}));
    document.body.appendChild(out);
  }
  function results(tries) {  // the search page's summary says when the search finished
    var found = Array.from(document.querySelectorAll("#search-results li a"))
                     .map(function (a) { return a.getAttribute("href").split("?")[0].split("#")[0]; });
    var snippets = Array.from(document.querySelectorAll("#search-results li p.context"))
                        .map(function (p) { return p.textContent; });
    var summary = document.querySelector("#search-results .search-summary");
    if (/finished|did not match/.test(summary ? summary.textContent : "") || tries > 60) {
      report({results: found, snippets: snippets});
    }
    else setTimeout(function () { results(tries + 1); }, 100);
  }
  var typeset = window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve();
  typeset.then(function () {
    if (document.getElementById("search-results")) results(0); else report();
  });
});
</script>
"""


# Headless Chromium lays a page out at least 500 pixels wide whatever --window-size says: the
# landing page is measured inside a 390-pixel-wide frame, whose probe record is copied out.
PHONE = """<!doctype html><html><head><link rel="icon" href="_static/favicon.svg"></head>
<body style="margin:0">
<iframe id="phone" src="index.html" style="width:390px;height:2400px;border:0"></iframe>
<script>
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
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            command = [shutil.which(name), "--headless", "--disable-gpu", "--hide-scrollbars",
                       "--no-first-run", "--virtual-time-budget=8000"]
            return command + (["--no-sandbox"] if os.geteuid() == 0 else [])
    sys.exit("No Chromium found: apt-get update && apt-get install -y chromium")


def probe(browser, url, width=1280):
    """The probe's record of a page after its scripts ran (None: the probe never reported), and
    the console's errors (lines that say Uncaught)."""
    run = subprocess.run([*browser, f"--window-size={width},2400", "--enable-logging=stderr", "--v=0",
                          "--dump-dom", url], capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="site-probe"[^>]*>(.*?)</pre>', run.stdout, re.S)
    errors = [line.split("CONSOLE", 1)[-1].strip() for line in run.stderr.splitlines()
              if "CONSOLE" in line and "Uncaught" in line]
    record = json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&")) if found else None
    return record, errors


def with_probes(site_dir, tmp):
    """A copy of the site whose pages carry the probe script."""
    copy = pathlib.Path(tmp) / "site"
    shutil.copytree(site_dir, copy)
    for page in copy.glob("*.html"):
        page.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    (copy / "phone.html").write_text(PHONE)
    return copy


class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the folder quietly and remembers every path that answered 404."""
    missing = []

    def log_message(self, *args):
        pass

    def send_error(self, code, *args, **kwargs):
        if code == 404:
            self.missing.append(self.path)
        super().send_error(code, *args, **kwargs)


def serve(folder):
    """A local HTTP server for folder on 127.0.0.1 (a free port), in a thread; returns it and the
    list of paths that answered 404."""
    missing = []
    recording = type("Handler", (RecordingHandler,), {"missing": missing})
    handler = functools.partial(recording, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, missing


def search_terms():
    """For each notebook, a word of its text that no other notebook has, and its page."""
    return [(unique_words(stem)[0], f"{stem}.html") for stem, *_ in course.NOTEBOOKS]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="rebuild the site first")
    parser.add_argument("--site", type=pathlib.Path, default=site.OUT)
    args = parser.parse_args(argv)
    if args.build or not (args.site / "index.html").exists():
        site.build(args.site)
    browser = chromium()
    failures = []
    pages = ["index.html"] + [f"{stem}.html" for stem, *_ in course.NOTEBOOKS] + ["notation.html"]
    with tempfile.TemporaryDirectory(prefix="course-site-check-") as tmp:
        copy = with_probes(args.site, tmp)
        server, missing = serve(copy)
        base = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            print(f"{'page':32} {'formulas':>8} {'typeset':>8} {'errors':>6} {'images':>6} {'loaded':>6} "
                  f"{'no alt':>6} {'js errors':>9}")
            for page in pages:
                seen, errors = probe(browser, f"{base}/{page}")
                if seen is None:
                    failures.append(f"{page}: the probe did not report (scripts did not run?)")
                    continue
                loaded = seen["images"] - len(seen["broken"])
                print(f"{page:32} {seen['formulas']:>8} {seen['typeset']:>8} {seen['errors']:>6} "
                      f"{seen['images']:>6} {loaded:>6} {len(seen['no_alt']):>6} {len(errors):>9}")
                if seen["untypeset"] or seen["errors"] or (seen["formulas"] and not seen["typeset"]):
                    failures.append(f"{page}: {seen['untypeset']} formulas not typeset, "
                                    f"{seen['errors']} TeX errors")
                if seen["broken"]:
                    failures.append(f"{page}: images not loaded: {seen['broken']}")
                if seen["no_alt"]:
                    failures.append(f"{page}: images without alt text: {seen['no_alt']}")
                failures += [f"{page}: JavaScript error: {e}" for e in errors]
            seen, errors = probe(browser, f"{base}/phone.html")
            seen = seen or {"offscreen": ["the probe did not report"], "starts": 0, "width": None}
            print(f"index.html {seen['width']} px wide: {seen['starts']} start buttons, "
                  f"{len(seen['offscreen'])} beyond the window's edge {seen['offscreen'][:3]}")
            if seen["offscreen"] or not seen["starts"] or seen["width"] != 390:
                failures.append(f"index.html at 390 px: start buttons beyond the window: {seen['offscreen']}")
            for term, expected in search_terms():
                for where, root in (("file", (copy / "search.html").resolve().as_uri()),
                                    ("http", f"{base}/search.html")):
                    seen, errors = probe(browser, f"{root}?q={term}")
                    found = (seen or {}).get("results", [])
                    tex = [s for s in (seen or {}).get("snippets", []) if re.search(r"\\[(a-zA-Z]", s)]
                    print(f"search {term!r} from {where}: {len(found)} pages, {expected} "
                          f"{'found' if expected in found else 'MISSING'}, {len(tex)} snippets with TeX")
                    if expected not in found:
                        failures.append(f"search {term!r} from {where} does not find {expected}")
                    if tex:
                        failures.append(f"search {term!r}: TeX in a snippet: {tex[0][:100]!r}")
                    if where == "http":  # from file://, Sphinx's search cannot fetch pages for snippets
                        failures += [f"search page: JavaScript error: {e}" for e in errors]
        finally:
            server.shutdown()
        print(f"{len(missing)} requests answered 404 {sorted(set(missing))[:5]}")
        failures += [f"404: {path}" for path in sorted(set(missing))]
    SHOTS.mkdir(exist_ok=True)
    for page in ["index.html", "03_encoder_layer.html", "09_translation.html"]:
        for width in (1280, 390):
            shot = SHOTS / page.replace(".html", f"_{width}.png")
            subprocess.run([*browser, f"--window-size={width},{2400 if width == 390 else 2000}",
                            f"--screenshot={shot}", (args.site / page).resolve().as_uri()],
                           capture_output=True, timeout=180)
            print(f"screenshot {shot.relative_to(ROOT)}" if shot.exists() else f"no screenshot of {page}")
            if not shot.exists():
                failures.append(f"no screenshot of {page} at {width} px")
    print("\n".join(["", *failures]) if failures else "\nall browser checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
