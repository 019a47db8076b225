// busca's page: small enhancements only; every view works without this file.
(function () {
  "use strict";

  // The method switch searches again at once when a question is typed.
  function autoSubmit() {
    var form = document.getElementById("search");
    if (!form) return;
    form.querySelectorAll('input[name="method"]').forEach(function (radio) {
      radio.addEventListener("change", function () {
        if (document.getElementById("q").value.trim()) form.submit();
      });
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
    linkPassages();
    slashFocus();
  });
})();
