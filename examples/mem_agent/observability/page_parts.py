"""The pieces of the viewer's page: one question with its memories, the style and the script.

Everything a page shows is text from a run (questions, documents' words in memories, model
output), so every piece of it goes through html.escape; the only markup is ours.
"""

from __future__ import annotations

import html

from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord
from mem_agent.observability.word_diff import diff_html

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:16px 20px;
color:#1f2328;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px}
.meta,.note{color:#59636e;font-size:13px}.note{background:#fff8c5;padding:6px 10px;border-radius:6px;margin:6px 0}
table.summary{border-collapse:collapse;font-size:13px}table.summary td,table.summary th{border:1px solid #d1d9e0;
padding:3px 8px;text-align:right}
.charts{display:flex;flex-wrap:wrap;gap:8px}.chart{width:320px;height:170px;border:1px solid #d1d9e0;border-radius:6px}
.chart .title{font-size:12px;font-weight:600}.chart .tick,.chart .axis{font-size:10px;fill:#59636e}
.chart .grid{stroke:#eaeef2}.chart .series{fill:none;stroke:#0969da;stroke-width:1.5}.chart .dot{fill:#0969da}
.controls{position:sticky;top:0;background:#fff;padding:8px 0;border-bottom:1px solid #d1d9e0;display:flex;gap:8px;
align-items:center;flex-wrap:wrap;z-index:1}
.controls input[type=search]{flex:1;min-width:200px;padding:4px 8px}
details.item{border:1px solid #d1d9e0;border-radius:6px;margin:8px 0;padding:0 10px}
details.item>summary{cursor:pointer;padding:8px 0;list-style-position:outside}
.badge{display:inline-block;min-width:34px;text-align:center;border-radius:10px;padding:0 6px;font-size:12px;
font-weight:600;margin-right:6px}.right{background:#dafbe1;color:#116329}.wrong{background:#ffebe9;color:#a40e26}
.failed{background:#eaeef2;color:#59636e}.group{color:#59636e;font-size:12px;margin-right:6px}
dl.facts{display:grid;grid-template-columns:130px 1fr;gap:2px 10px;margin:6px 0 10px}dl.facts dt{color:#59636e}
dl.facts dd{margin:0;white-space:pre-wrap;word-break:break-word}
ol.turns{list-style:none;padding:0;margin:0 0 10px}
li.turn{border-left:3px solid #d1d9e0;padding:2px 0 6px 10px;margin:4px 0}li.turn.final{border-color:#8250df}
li.turn.cut{border-color:#bf8700}.turn-head{font-size:12px;color:#59636e}
.memory{white-space:pre-wrap;word-break:break-word;font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;
background:#f6f8fa;padding:6px 8px;border-radius:4px;margin-top:2px}
ins{background:#aceebb;text-decoration:none}del{background:#ffcecb;color:#82071e}
body.plain del{display:none}body.plain ins{background:none}
.gap{color:#59636e;font-style:italic;font-size:12px}
"""

SCRIPT = """
(function () {
  var items = Array.prototype.slice.call(document.querySelectorAll("details.item"));
  var filter = document.getElementById("filter");
  var outcome = document.getElementById("outcome");
  var shown = document.getElementById("shown");
  function apply() {
    var text = filter.value.toLowerCase(), want = outcome.value, count = 0;
    items.forEach(function (item) {
      var ok = (!text || item.getAttribute("data-search").indexOf(text) >= 0) &&
        (want === "all" || item.getAttribute("data-outcome") === want);
      item.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
  }
  filter.addEventListener("input", apply);
  outcome.addEventListener("change", apply);
  document.getElementById("expand").addEventListener("click", function () {
    items.forEach(function (item) { if (!item.hidden) { item.open = true; } });
  });
  document.getElementById("collapse").addEventListener("click", function () {
    items.forEach(function (item) { item.open = false; });
  });
  document.getElementById("changes").addEventListener("change", function (event) {
    document.body.classList.toggle("plain", !event.target.checked);
  });
  // A link can carry a view: page.html#filter=paris&outcome=wrong opens filtered.
  var wanted = new URLSearchParams(window.location.hash.slice(1));
  if (wanted.has("filter")) { filter.value = wanted.get("filter"); }
  if (wanted.has("outcome")) { outcome.value = wanted.get("outcome"); }
  apply();
  document.body.setAttribute("data-ready", "1");
})();
"""

# Scores shown per question, in order; the first present one decides right/wrong.
SCORE_NAMES = ("sub_em", "strict", "em", "f1")


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def outcome_of(record: TrajectoryRecord, metric: str) -> str:
    if record.status != "completed" or metric not in record.scores:
        return "failed"
    return "right" if record.scores[metric] > 0 else "wrong"


def item_html(record: TrajectoryRecord, group: str, metric: str, max_turns: int, *, open_: bool = False) -> str:
    outcome = outcome_of(record, metric)
    badge = {"right": "right", "wrong": "wrong", "failed": record.status or "failed"}[outcome]
    search = " ".join([record.item_id, record.question, *record.ground_truths, record.answer]).lower()
    head = (
        f'<summary><span class="badge {outcome}">{esc(badge)}</span><span class="group">{esc(group)}'
        f" · #{esc(record.item_id)}</span>{esc(record.question)}</summary>"
    )
    return (
        f'<details class="item" data-outcome="{outcome}" data-search="{esc(search)}"{" open" if open_ else ""}>'
        f"{head}{_facts(record)}{_turns(record, max_turns)}</details>"
    )


def _facts(record: TrajectoryRecord) -> str:
    scores = ", ".join(f"{name} {record.scores[name]:.2f}" for name in SCORE_NAMES if name in record.scores)
    rows = [
        ("question", record.question),
        ("gold", " | ".join(record.ground_truths)),
        ("final answer", record.answer or "(none)"),
        ("scores", scores or "(not scored)"),
        ("status", record.status + (f": {record.error}" if record.error else "")),
        ("context", f"{record.context_tokens:,} tokens" + _dropped(record)),
    ]
    if record.reward is not None:
        rows.append(
            (
                "reward",
                f"{record.reward:.3f}" + ("" if record.advantage is None else f", advantage {record.advantage:+.3f}"),
            )
        )
    if record.mode:
        rows.append(("mode", record.mode))
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows) + "</dl>"


def _dropped(record: TrajectoryRecord) -> str:
    return f" ({record.dropped_tokens:,} cut from the middle)" if record.dropped_tokens else ""


def _turns(record: TrajectoryRecord, max_turns: int) -> str:
    """Each memory against the one before it (the first against nothing); past `max_turns` memory
    turns the first and last halves are shown, each still diffed against its true predecessor."""
    if not record.turns:
        return '<p class="gap">no turn records for this question</p>'
    memories = [turn for turn in record.turns if turn.kind == "memory"]
    keep = set(range(len(memories)))
    if len(memories) > max_turns:
        head = max_turns // 2
        keep = set(range(head)) | set(range(len(memories) - (max_turns - head), len(memories)))
    parts, previous = [], ""
    for index, turn in enumerate(memories):
        if index in keep:
            parts.append(_memory_turn(turn, previous))
        elif index - 1 in keep:
            hidden = len(memories) - len(keep)
            parts.append(f'<li class="gap">{hidden} memory turns not shown (--max-turns {max_turns})</li>')
        previous = turn.text
    parts += [_final_turn(turn) for turn in record.turns if turn.kind == "final"]
    return '<ol class="turns">' + "".join(parts) + "</ol>"


def _memory_turn(turn: TurnRecord, previous: str) -> str:
    body, counts = diff_html(previous, turn.text)
    flags = " · cut by the token limit" if turn.cut else ""
    if turn.state_reward is not None:
        flags += f" · state reward {turn.state_reward:+.3f}"
    recall = ""
    if turn.recall_query:
        recall = f'<div class="turn-head">recall query: {esc(turn.recall_query)}</div>'
    if turn.recalled:
        recall += f'<div class="turn-head">recalled: {esc(turn.recalled)}</div>'
    return (
        f'<li class="turn memory{" cut" if turn.cut else ""}"><div class="turn-head">chunk {turn.step}'
        f" · memory {turn.memory_tokens} tokens · +{counts.added} −{counts.removed} words{flags}</div>"
        f'{recall}<div class="memory">{body}</div></li>'
    )


def _final_turn(turn: TurnRecord) -> str:
    flags = " · cut by the token limit" if turn.cut else ""
    return (
        f'<li class="turn final"><div class="turn-head">final answer · {turn.response_tokens} tokens{flags}</div>'
        f'<div class="memory answer">{esc(turn.text)}</div></li>'
    )
