"""Stand-ins for the authors' source files, served from a loopback HTTP server.

`mem_agent.fetch_prompts` reads MemAgent's and ReMemR1's template strings out of their Python files.
The tests never download those files and never hold their wording: each stand-in below has the
layout the extractor relies on (which names hold the templates, whether the "no memory" text sits in
a call, which placeholder syntax the file's client uses) with wording we invent, plus module-level
code that would fail loudly if the file were ever executed instead of parsed.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mem_agent import fetch_prompts
from mem_agent.templates.sources import SOURCES

FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"

# Wording we invent, in the authors' placeholder syntax. The training variants are read by a token
# template, so `{{}}` and `{}` are literal text there; the evaluation variants go through str.format.
# Both keep the details that decide tokens: a space after an opening tag, a trailing newline.
MEMORY_TRAIN = """Scan the excerpt for anything that settles the query and fold it into your running log.

<query>
{prompt}
</query>

<log>
{memory}
</log>

<excerpt>
{chunk}
</excerpt>

Revised log:
"""
FINAL_TRAIN = """Settle the query from the log alone; wrap the reply as \\boxed{{}} (or {} when unsure).

<query>
{prompt}
</query>

<log>
{memory}
</log>

Reply:
"""
# A space after an opening tag, kept by both clients (and easy to lose to an editor or a strip).
MEMORY_TRAIN, FINAL_TRAIN = (text.replace("<query>\n", "<query> \n") for text in (MEMORY_TRAIN, FINAL_TRAIN))
MEMORY_EVAL = MEMORY_TRAIN.replace("fold it", "fold it, {{briefly}},")
FINAL_EVAL = FINAL_TRAIN.replace(" (or {} when unsure)", "")
RECALL_BLOCK = "<revisited>\n{recalled_memory}\n</revisited>\n\n<log>"
MEMORY_TRAIN_R1 = MEMORY_TRAIN.replace("<log>", RECALL_BLOCK, 1)
FINAL_TRAIN_R1 = FINAL_TRAIN.replace("<log>", RECALL_BLOCK, 1)
MEMORY_EVAL_R1 = MEMORY_EVAL.replace("<log>", RECALL_BLOCK, 1)
FINAL_EVAL_R1 = FINAL_EVAL.replace("<log>", RECALL_BLOCK, 1)
NO_MEMORY = "Nothing logged yet"
NO_RECALL = "Nothing was revisited."

_TRAP = 'raise SystemExit("this stand-in was executed; it must only be parsed")\n'


def _file(constants: str, *, in_class: str = "") -> str:
    body = f"import torch\n{_TRAP}\n{constants}\n"
    if in_class:
        body += f"\nclass Agent:\n    def __init__(self, tokenizer):\n{in_class}"
    return body


STAND_INS = {
    "memagent": _file(
        f"TEMPLATE = {MEMORY_TRAIN!r}\nTEMPLATE_FINAL_BOXED = {FINAL_TRAIN!r}\n",
        in_class=f"        self.NO_MEMORY_TOKENS = tokenizer.encode({NO_MEMORY!r}, add_special_tokens=False)\n",
    ),
    "memagent-eval": _file(f"TEMPLATE = {MEMORY_EVAL!r}\nTEMPLATE_FINAL = {FINAL_EVAL!r}\nNO_MEMORY = {NO_MEMORY!r}\n"),
    "rememr1": _file(
        f"TEMPLATE = {MEMORY_TRAIN_R1!r}\nTEMPLATE_FINAL_BOXED = {FINAL_TRAIN_R1!r}\n",
        in_class=(
            f"        self.NO_MEMORY_STRING = {NO_MEMORY!r}\n"
            f"        self.NO_MEMORY_RECALLED_STRING = {NO_RECALL!r}\n"
            "        self.NO_MEMORY_TOKENS = torch.tensor(tokenizer.encode(self.NO_MEMORY_STRING))\n"
        ),
    ),
    "rememr1-eval": _file(
        f"TEMPLATE = {MEMORY_EVAL_R1!r}\nTEMPLATE_FINAL_BOXED = {FINAL_EVAL_R1!r}\n"
        f"NO_MEMORY = {NO_MEMORY!r}\nNO_RECALLED_MEMORY = {NO_RECALL!r}\n"
    ),
}


@dataclass(frozen=True)
class Mirror:
    url: str
    root: Path

    def publish(self, source: str, text: str, commit: str = FAKE_COMMIT) -> str:
        """Serve `text` where `source`'s file lives at `commit`; returns its sha256."""
        spec = SOURCES[source]
        path = self.root / spec.repository / commit / spec.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        return hashlib.sha256(text.encode()).hexdigest()

    def fetch(self, source: str, out: Path, *extra: str, text: str | None = None) -> int:
        digest = self.publish(source, STAND_INS[source] if text is None else text)
        argv = ["--source", source, "--out", str(out), "--base-url", self.url, "--commit", FAKE_COMMIT]
        return fetch_prompts.main([*argv, "--sha256", digest, "--force", *extra])


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def loopback_mirror(root: Path) -> Iterator[Mirror]:
    """A raw-file server on 127.0.0.1 with GitHub's layout ({owner}/{repo}/{commit}/{path})."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Mirror(f"http://127.0.0.1:{server.server_address[1]}", root)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
