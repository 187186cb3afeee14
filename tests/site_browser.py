"""Open the built website in headless Chromium and check what a reader's browser shows.

    .venv/bin/python tests/site_browser.py           # check _site/ (built first if missing)
    .venv/bin/python tests/site_browser.py --build   # rebuild _site/ first

Needs Debian's Chromium (``apt-get update && apt-get install -y chromium``); as root it runs
with ``--no-sandbox``. On a copy of the site, each page gets a small probe script that waits for
MathJax, then records how many formulas were typeset (``mjx-container`` elements), how many
TeX errors there were and which images did not load; Chromium's ``--dump-dom`` prints the page
after its scripts ran. The search page is queried for a term of each notebook, from ``file://``
and from a local HTTP server on 127.0.0.1. Screenshots of the landing page and of notebooks 01
and 05 go to ``_site_screenshots/``. Exits 1 when a check fails.
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

from helpers import course, site  # noqa: E402
from test_site import unique_words  # noqa: E402

SHOTS = ROOT / "_site_screenshots"
PROBE = """<script>
document.querySelectorAll("img").forEach(function (img) { img.loading = "eager"; });
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
      errors: document.querySelectorAll("mjx-merror").length
    }, extra || {}));
    document.body.appendChild(out);
  }
  function results(tries) {  // the search page's summary says when the search finished
    var found = Array.from(document.querySelectorAll("#search-results li a"))
                     .map(function (a) { return a.getAttribute("href").split("?")[0].split("#")[0]; });
    var summary = document.querySelector("#search-results .search-summary");
    if (/finished|did not match/.test(summary ? summary.textContent : "") || tries > 60) {
      report({results: found});
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


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            command = [shutil.which(name), "--headless", "--disable-gpu", "--hide-scrollbars",
                       "--no-first-run", "--virtual-time-budget=8000"]
            return command + (["--no-sandbox"] if os.geteuid() == 0 else [])
    sys.exit("No Chromium found: apt-get update && apt-get install -y chromium")


def probe(browser, url):
    """The probe's record of a page after its scripts ran (None: the probe never reported)."""
    run = subprocess.run([*browser, "--dump-dom", url], capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="site-probe"[^>]*>(.*?)</pre>', run.stdout, re.S)
    return json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&")) if found else None


def with_probes(site_dir, tmp):
    """A copy of the site whose pages carry the probe script."""
    copy = pathlib.Path(tmp) / "site"
    shutil.copytree(site_dir, copy)
    for page in copy.glob("*.html"):
        page.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    return copy


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder):
    """A local HTTP server for folder on 127.0.0.1 (a free port), in a thread; returns it."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


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
        print(f"{'page':32} {'formulas':>8} {'typeset':>8} {'errors':>6} {'images':>6} {'loaded':>6}")
        for page in pages:
            seen = probe(browser, (copy / page).resolve().as_uri())
            if seen is None:
                failures.append(f"{page}: the probe did not report (scripts did not run?)")
                continue
            loaded = seen["images"] - len(seen["broken"])
            print(f"{page:32} {seen['formulas']:>8} {seen['typeset']:>8} {seen['errors']:>6} "
                  f"{seen['images']:>6} {loaded:>6}")
            if seen["untypeset"] or seen["errors"] or (seen["formulas"] and not seen["typeset"]):
                failures.append(f"{page}: {seen['untypeset']} formulas not typeset, "
                                f"{seen['errors']} TeX errors")
            if seen["broken"]:
                failures.append(f"{page}: images not loaded: {seen['broken']}")
        server = serve(copy)
        try:
            base = f"http://127.0.0.1:{server.server_address[1]}"
            for term, expected in search_terms():
                for where, root in (("file", (copy / "search.html").resolve().as_uri()),
                                    ("http", f"{base}/search.html")):
                    seen = probe(browser, f"{root}?q={term}")
                    found = (seen or {}).get("results", [])
                    print(f"search {term!r} from {where}: {len(found)} pages, {expected} "
                          f"{'found' if expected in found else 'MISSING'}")
                    if expected not in found:
                        failures.append(f"search {term!r} from {where} does not find {expected}")
        finally:
            server.shutdown()
    SHOTS.mkdir(exist_ok=True)
    for page in ["index.html", "01_positions.html", "05_training_recipe.html"]:
        shot = SHOTS / page.replace(".html", ".png")
        subprocess.run([*browser, "--window-size=1280,2000", f"--screenshot={shot}",
                        (args.site / page).resolve().as_uri()], capture_output=True, timeout=180)
        print(f"screenshot {shot.relative_to(ROOT)}" if shot.exists() else f"no screenshot of {page}")
        if not shot.exists():
            failures.append(f"no screenshot of {page}")
    print("\n".join(["", *failures]) if failures else "\nall browser checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
