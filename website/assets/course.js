/* The course's website. Search results: each result's snippet is the sentence of its page that
   matches the query (formulas as plain text: √d_model, not TeX). Sphinx's own snippet fetches the
   page (which a browser refuses from file://) and cuts 240 characters from the start of its text,
   often the theme's hidden contents and sidebars. Here each page's sentences come from
   _static/search/PAGE.js, written by helpers/course/site.py after the build and loaded by a script tag,
   which works from file:// as over HTTP. */
(function () {
  var texts = {}, waiting = {};

  window.CourseSearch = {
    add: function (page, sections, sentences) {
      texts[page] = {sections: sections, sentences: sentences};
      (waiting[page] || []).forEach(function (then) { then(); });
      delete waiting[page];
    }
  };

  function load(page, then) {
    if (texts[page]) { then(); return; }
    if (waiting[page]) { waiting[page].push(then); return; }
    waiting[page] = [then];
    var script = document.createElement("script");
    script.src = (document.documentElement.dataset.content_root || "") + "_static/search/" +
                 encodeURIComponent(page) + ".js";
    script.onerror = function () { delete waiting[page]; };
    document.head.appendChild(script);
  }

  function escaped(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  function queryTerms() {
    // the query's words as Sphinx searches them: lower case, no stop words, stemmed
    var query = new URLSearchParams(window.location.search).get("q") || "";
    var words = query.toLowerCase().split(/[^\p{Letter}\p{Number}_]+/u).filter(function (w) {
      return w && !/^\d+$/.test(w) && (typeof stopwords === "undefined" || stopwords.indexOf(w) < 0);
    });
    var stemmer = typeof Stemmer === "function" ? new Stemmer() : null;
    return words.map(function (w) {
      // the part the word and its stem share ("vocabulary", "vocabulari": "vocabular")
      var stem = stemmer ? stemmer.stemWord(w) : w, n = 0;
      while (n < Math.min(w.length, stem.length) && w[n] === stem[n]) n++;
      return {word: w, pattern: new RegExp("(^|[^\\p{Letter}\\p{Number}])" +
                                           escaped(w.slice(0, Math.max(n, 3))), "iu")};
    });
  }

  function bestSentence(page, anchor, terms) {
    var text = texts[page], best = null, bestScore = 0;
    var section = text.sections.indexOf(anchor.replace(/^#/, ""));
    text.sentences.forEach(function (item) {
      var score = terms.filter(function (t) { return t.pattern.test(item[1]); }).length;
      if (score && section >= 0 && item[0] === section) score += 0.5;
      if (score > bestScore) { best = item[1]; bestScore = score; }
    });
    return best;
  }

  function shortened(sentence, terms) {
    // a long sentence: about 260 characters around its first match
    if (sentence.length <= 300) return sentence;
    var at = sentence.length;
    terms.forEach(function (t) {
      var m = t.pattern.exec(sentence);
      if (m) at = Math.min(at, m.index);
    });
    var start = Math.max(0, sentence.lastIndexOf(" ", Math.max(0, at - 100)));
    var end = sentence.indexOf(" ", Math.min(sentence.length, start + 260));
    end = end < 0 ? sentence.length : end;
    return (start > 0 ? "… " : "") + sentence.slice(start, end).trim() + (end < sentence.length ? " …" : "");
  }

  function addSnippet(item, terms) {
    var link = item.querySelector("a");
    if (!link || item.querySelector("p.context")) return;
    var href = link.getAttribute("href") || "";
    var page = href.split("#")[0].split("?")[0].replace(/\.html$/, "");
    var anchor = href.indexOf("#") >= 0 ? href.slice(href.indexOf("#")) : "";
    load(page, function () {
      var sentence = bestSentence(page, anchor, terms);
      if (!sentence || item.querySelector("p.context")) return;
      var p = document.createElement("p");
      p.className = "context";
      p.textContent = shortened(sentence, terms);
      item.appendChild(p);
      if (typeof _highlightText === "function") {
        terms.forEach(function (t) { _highlightText(p, t.word, "highlighted"); });
      }
    });
  }

  function install() {
    var results = document.getElementById("search-results");
    if (!results || results.dataset.courseSnippets) return;
    results.dataset.courseSnippets = "yes";
    var terms = queryTerms();
    new MutationObserver(function () {
      results.querySelectorAll("ul.search > li").forEach(function (li) { addSnippet(li, terms); });
    }).observe(results, {childList: true, subtree: true});
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", install);
  else install();
})();

/* Every page: a table wider than its column says that it scrolls sideways (a cue above it, shown
   only while it does); before printing, every fold opens (and closes again after). */
(function () {
  function cues() {
    document.querySelectorAll("article .pst-scrollable-table-container").forEach(function (box) {
      var cue = box.previousElementSibling;
      if (!cue || !cue.classList.contains("course-scroll-cue")) {
        cue = document.createElement("p");
        cue.className = "course-scroll-cue";
        cue.textContent = "The table scrolls sideways \u2192";
        box.parentNode.insertBefore(cue, box);
      }
      cue.hidden = box.scrollWidth <= box.clientWidth + 1;
    });
  }
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; opened.push(d); });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });
  window.addEventListener("resize", cues);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", cues);
  else cues();
  window.addEventListener("load", cues);
})();
