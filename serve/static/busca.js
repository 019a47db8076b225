// busca's page: small enhancements only; every view works without this file.
(function () {
  "use strict";

  // The method switch searches again at once when a question is typed: on a click; the
  // arrow keys only move the choice (a search at each step would take the keyboard user
  // back to the box), and Enter searches.
  function autoSubmit() {
    var form = document.getElementById("search");
    if (!form) return;
    var arrowed = false;
    function asked() { return document.getElementById("q").value.trim(); }
    form.querySelectorAll('input[name="method"]').forEach(function (radio) {
      radio.addEventListener("keydown", function (e) {
        arrowed = e.key.indexOf("Arrow") === 0;
        if (e.key === "Enter" && asked()) {
          e.preventDefault();
          form.submit();
        }
      });
      radio.addEventListener("change", function () {
        if (!arrowed && asked()) form.submit();
        arrowed = false;
      });
    });
  }

  // Back, forward or reload: the form shows the search of the URL, as the hits do, not the
  // question typed or the method picked before the page was left (which the browser keeps).
  function formFromUrl() {
    window.addEventListener("pageshow", function (e) {
      var form = document.getElementById("search");
      var nav = performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
      if (form && (e.persisted || (nav && nav.type !== "navigate"))) form.reset();
    });
  }

  // Compare view: pointing at a card lights up the same passage in every column.
  function linkPassages() {
    var cards = document.querySelectorAll("#compare .card[data-chunk]");
    cards.forEach(function (card) {
      var same = document.querySelectorAll('#compare .card[data-chunk="' + card.dataset.chunk + '"]');
      card.addEventListener("mouseenter", function () {
        same.forEach(function (c) { c.classList.add("linked"); });
      });
      card.addEventListener("mouseleave", function () {
        same.forEach(function (c) { c.classList.remove("linked"); });
      });
    });
    document.querySelectorAll("#compare a.rank-link").forEach(function (link) {
      link.addEventListener("click", function () {
        var target = document.getElementById(link.getAttribute("href").slice(1));
        if (!target) return;
        target.classList.remove("flash");
        void target.offsetWidth;  // restart the animation
        target.classList.add("flash");
      });
    });
  }

  // "/" puts the cursor in the search box.
  function slashFocus() {
    document.addEventListener("keydown", function (e) {
      var q = document.getElementById("q");
      if (e.key === "/" && q && document.activeElement !== q) {
        e.preventDefault();
        q.focus();
        q.select();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    autoSubmit();
    formFromUrl();
    linkPassages();
    slashFocus();
  });
})();
