"""Check which RULER-HQA eval files DATA_ROOT holds, and fetch or build the missing ones.

Each eval_<N>.json of LENGTH is read in full by the evaluator's checker; --download fetches the
missing ones, --build-from builds them; a table gives each length's status (present, missing,
downloaded, built, invalid, download failed, build failed), item count and size. Exit status: 0
every length ready, 1 some not, 2 a usage error. A file that exists is never overwritten or deleted;
a download is renamed into place only once it passed the check.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from mem_agent.evaluation.hqa_files import PrepareSettings, plan, prepare_and_report
from mem_agent.settings.command import Command

COMMAND = Command(
    "mem_agent.prepare_eval_data",
    PrepareSettings,
    "prepare-eval-data.sh",
    __doc__ or "",
    "Each file must be a JSON array of objects with context, input and answers. HF_TOKEN is read from the"
    " environment only and sent as an Authorization header to the Hub's host only; it is never printed."
    " PYTHON: the interpreter with mem-agent installed (default: the checkout's .venv, else python3).",
)


def main(argv: Sequence[str] | None = None) -> int:
    return COMMAND.run(argv, os.environ, plan, prepare_and_report)


if __name__ == "__main__":
    raise SystemExit(main())
