"""The suite's two rules for every run, as a pytest plugin (tests/conftest.py loads it).

1. **Nothing is skipped.** A fresh clone must run every test: a test that cannot run where the
   real HotpotQA sample is absent is not collected there (conftest's `qa_source`), never skipped.
   A skip would hide a behaviour nobody checks, as 46 of them once did, so here it is a failure
   that names its reason. Deselecting with `-m` or `-k` is not a skip and stays allowed.
2. **Subprocesses run this checkout's code.** pytest's `pythonpath` setting puts the checkout
   first for the test process only; a test that starts `python -m mem_agent...` would otherwise
   import whatever the interpreter has installed (the editable install of another clone, when a
   copy of the repository borrows its virtual environment, as CI's bare-copy run does).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
IMPORT_ROOTS = (PROJECT_ROOT / "examples", PROJECT_ROOT / "tests", PROJECT_ROOT)

NO_SKIPS = "this suite never skips a test: make it run here, or do not collect it here (see tests/conftest.py)"


def pytest_configure(config: pytest.Config) -> None:
    inherited = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    ours = [str(path) for path in IMPORT_ROOTS]
    os.environ["PYTHONPATH"] = os.pathsep.join([*ours, *(entry for entry in inherited if entry not in ours)])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped ({_reason(report.longrepr)}): {NO_SKIPS}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if report.skipped:
        report.outcome = "failed"
        report.longrepr = f"module skipped ({_reason(report.longrepr)}): {NO_SKIPS}"


def _reason(longrepr: object) -> str:
    """A skip's longrepr is (file, line, 'Skipped: reason')."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)
