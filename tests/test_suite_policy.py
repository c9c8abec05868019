"""The suite's own rules: nothing skips, real-data cases exist only where the data does, and
subprocesses run this checkout's code (tests/support/suite_policy.py, tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import HOTPOT_SAMPLE, PROJECT_ROOT

from mem_agent import synthetic_qa
from support.suite_policy import NO_SKIPS


def _pytest(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_skip_anywhere_is_a_failure_that_names_its_reason(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_skips.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_skips_inside():
                pytest.skip("no sample here")

            @pytest.mark.skip(reason="marked away")
            def test_marked():
                pass

            @pytest.mark.xfail(strict=True)
            def test_known_failure():
                assert False

            def test_runs():
                assert True
            """
        )
    )
    result = _pytest("-p", "support.suite_policy", "-rA", str(tmp_path), cwd=tmp_path)
    out = result.stdout
    assert result.returncode == 1, out
    assert "skipped (no sample here)" in out and "skipped (marked away)" in out and NO_SKIPS in out
    # A skip inside the test fails its call; a skip mark fails its setup, which pytest counts as an error.
    assert "1 failed, 1 passed, 1 xfailed, 1 error" in out.splitlines()[-1], "an xfail is not a skip"


def test_a_module_that_skips_itself_stops_the_run_as_a_collection_error(tmp_path):
    """`pytest.importorskip` or a module-level skip would hide a whole file: it is an error."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_module_skip.py").write_text(
        'import pytest\npytest.skip("module needs a GPU", allow_module_level=True)\n'
    )
    result = _pytest("-p", "support.suite_policy", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2 and f"module skipped (module needs a GPU): {NO_SKIPS}" in result.stdout


def test_subprocesses_of_a_test_import_this_checkout(tmp_path):
    """A copy of the repository that borrows another clone's virtual environment (CI's bare-copy
    run) still runs its own code in every `python -m mem_agent...` a test starts."""
    probe = "import mem_agent, support; print(mem_agent.__file__); print(support.__file__)"
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.splitlines() == [
        str(PROJECT_ROOT / "examples" / "mem_agent" / "__init__.py"),
        str(PROJECT_ROOT / "tests" / "support" / "__init__.py"),
    ]


def _collected(shared_data: Path, *args: str) -> list[str]:
    env = {**os.environ, "MEM_SHARED_DATA": str(shared_data)}
    result = _pytest("--collect-only", "-q", "tests/test_prepare_data.py", *args, cwd=PROJECT_ROOT, env=env)
    assert result.returncode in (0, 5), result.stdout + result.stderr
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_real_data_cases_are_collected_only_where_the_sample_exists(tmp_path):
    """Without the sample a real case is not collected at all (never skipped); with it, every
    `qa_rows` test gains a `[hotpot]` case marked real_data, and `-m real_data` selects those alone."""
    absent = _collected(tmp_path / "nothing here")
    assert absent and not [test for test in absent if "[hotpot]" in test]
    stand_in = tmp_path / "data" / HOTPOT_SAMPLE.name  # our own rows under the sample's name
    stand_in.parent.mkdir()
    stand_in.write_text(json.dumps(synthetic_qa.generate(4, seed=1)))
    present = _collected(stand_in.parent)
    real = [test for test in present if "[hotpot]" in test]
    assert real and sorted(test.replace("[hotpot]", "[synthetic]") for test in real) == sorted(
        test for test in present if "[synthetic]" in test
    ), "every qa_rows test has both cases"
    assert len(present) == len(absent) + len(real)
    assert _collected(stand_in.parent, "-m", "real_data") == real
