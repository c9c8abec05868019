// The viewer's filters, inlined into every page. What each question is matched on comes from the
// page's JSON block (#items-data, one entry per question in page order), never from built strings.
(function () {
  "use strict";
  var items = Array.prototype.slice.call(document.querySelectorAll("details.item"));
  var data = JSON.parse(document.getElementById("items-data").textContent);
  var filter = document.getElementById("filter");
  var outcome = document.getElementById("outcome");
  // The task and length filters exist only where the run has more than one of each.
  var task = document.getElementById("task");
  var length = document.getElementById("length");
  var shown = document.getElementById("shown");
  var sort = document.getElementById("sort");
  var list = document.getElementById("items");

  // Rows sort by a number from the JSON block, largest first; a row without it goes last, and
  // "page" puts the run's order back.
  function reorder() {
    var key = sort.value;
    var order = items.slice();
    if (key !== "page") {
      order.sort(function (a, b) {
        var x = data[Number(a.dataset.index)][key];
        var y = data[Number(b.dataset.index)][key];
        if (x === null || x === undefined) {
          return y === null || y === undefined ? 0 : 1;
        }
        if (y === null || y === undefined) {
          return -1;
        }
        return y - x;
      });
    }
    order.forEach(function (item) {
      list.appendChild(item);
    });
  }

  // A task choice is a suite ("ruler") or one of its tasks ("ruler/niah_single_1"); a length is
  // keyed with its suite ("ruler/8192"), as the page's JSON block keys each question.
  function picked(select, entry) {
    if (!select || select.value === "all") {
      return true;
    }
    return select === task ? entry.task === select.value || entry.suite === select.value : entry.length === select.value;
  }

  function apply() {
    var text = filter.value.toLowerCase();
    var want = outcome.value;
    var count = 0;
    items.forEach(function (item, index) {
      var entry = data[index];
      var ok =
        (!text || entry.search.indexOf(text) >= 0) &&
        (want === "all" || entry.outcome === want) &&
        picked(task, entry) &&
        picked(length, entry);
      item.hidden = !ok;
      if (ok) {
        count += 1;
      }
    });
    shown.textContent = String(count);
  }

  filter.addEventListener("input", apply);
  sort.addEventListener("change", reorder);
  outcome.addEventListener("change", apply);
  [task, length].forEach(function (select) {
    if (select) {
      select.addEventListener("change", apply);
    }
  });
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
  // A link can carry a view: page.html#filter=paris&outcome=wrong&task=ruler/vt&length=ruler/8192 opens filtered.
  var wanted = new URLSearchParams(window.location.hash.slice(1));
  if (task && wanted.has("task")) {
    task.value = wanted.get("task");
  }
  if (length && wanted.has("length")) {
    length.value = wanted.get("length");
  }
  if (wanted.has("filter")) {
    filter.value = wanted.get("filter");
  }
  if (wanted.has("outcome")) {
    outcome.value = wanted.get("outcome");
  }
  if (wanted.has("sort")) {
    sort.value = wanted.get("sort");
  }
  reorder();
  apply();
  document.body.setAttribute("data-ready", "1");
})();
