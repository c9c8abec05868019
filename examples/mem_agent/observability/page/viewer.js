// The viewer's filters, inlined into every page. What each question is matched on comes from the
// page's JSON block (#items-data, one entry per question in page order), never from built strings.
(function () {
  "use strict";
  var items = Array.prototype.slice.call(document.querySelectorAll("details.item"));
  var data = JSON.parse(document.getElementById("items-data").textContent);
  var filter = document.getElementById("filter");
  var outcome = document.getElementById("outcome");
  var shown = document.getElementById("shown");

  function apply() {
    var text = filter.value.toLowerCase();
    var want = outcome.value;
    var count = 0;
    items.forEach(function (item, index) {
      var entry = data[index];
      var ok = (!text || entry.search.indexOf(text) >= 0) && (want === "all" || entry.outcome === want);
      item.hidden = !ok;
      if (ok) {
        count += 1;
      }
    });
    shown.textContent = String(count);
  }

  filter.addEventListener("input", apply);
  outcome.addEventListener("change", apply);
  document.getElementById("expand").addEventListener("click", function () {
    items.forEach(function (item) {
      if (!item.hidden) {
        item.open = true;
      }
    });
  });
  document.getElementById("collapse").addEventListener("click", function () {
    items.forEach(function (item) {
      item.open = false;
    });
  });
  document.getElementById("changes").addEventListener("change", function (event) {
    document.body.classList.toggle("plain", !event.target.checked);
  });
  // A link can carry a view: page.html#filter=paris&outcome=wrong opens filtered.
  var wanted = new URLSearchParams(window.location.hash.slice(1));
  if (wanted.has("filter")) {
    filter.value = wanted.get("filter");
  }
  if (wanted.has("outcome")) {
    outcome.value = wanted.get("outcome");
  }
  apply();
  document.body.setAttribute("data-ready", "1");
})();
