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

from mem_agent.data import synthetic
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
    stand_in.write_text(json.dumps(synthetic.generate(4, seed=1)))
    present = _collected(stand_in.parent)
    real = [test for test in present if "[hotpot]" in test]
    assert real and sorted(test.replace("[hotpot]", "[synthetic]") for test in real) == sorted(
        test for test in present if "[synthetic]" in test
    ), "every qa_rows test has both cases"
    assert len(present) == len(absent) + len(real)
    assert _collected(stand_in.parent, "-m", "real_data") == real


# ---- .ci/run: the suite from a fresh clone with nothing beside it --------------------------------

CI_RUN = PROJECT_ROOT / ".ci" / "run"


def test_ci_run_explains_itself_and_refuses_arguments():
    shown = subprocess.run(["bash", str(CI_RUN), "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("usage:") and "fresh clone" in shown.stdout
    refused = subprocess.run(["bash", str(CI_RUN), "--fast"], capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.startswith("error: unknown argument '--fast'")


def test_ci_run_refuses_an_uncommitted_pyproject_before_installing_anything(tmp_path):
    """The fresh clone borrows this clone's .venv and tests HEAD: its bootstrap would reinstall the
    shared environment from a pyproject.toml that differs from the working tree's."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / ".ci" / "run").write_text(CI_RUN.read_text())
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    for command in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "x"]):
        subprocess.run([*git, *command], check=True, capture_output=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    result = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "error: pyproject.toml has uncommitted changes; commit them first (the fresh clone tests HEAD)\n"
    )


def _stand_in_project(tmp_path: Path, extras_status: int) -> tuple[Path, Path]:
    """A committed repository with the real .ci/run, stand-ins for bootstrap.sh and test.sh that
    report where they ran, and a virtual environment whose python answers the real-data step
    with `extras_status`."""
    repo, venv = tmp_path / "clone", tmp_path / "venv"
    (repo / ".ci").mkdir(parents=True)
    (repo / "scripts").mkdir()
    (repo / ".ci" / "run").write_text(CI_RUN.read_text())
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (repo / "scripts" / "bootstrap.sh").write_text('echo "bootstrap in $PWD"\n')
    (repo / "scripts" / "test.sh").write_text(
        'echo "test.sh in $PWD venv=$(readlink .venv) shared=$(ls -d ../shared 2>/dev/null)'
        ' data=${MEM_SHARED_DATA:-}"\n'
        'git log --oneline | wc -l\necho "== 9 passed in 1.00s =="\n'
    )
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\necho "extras: $* in $PWD"\nexit {extras_status}\n')
    (venv / "bin" / "python").chmod(0o755)
    (tmp_path / "shared").mkdir()  # what CI has beside its clone, and a user does not
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    for command in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "x"]):
        subprocess.run([*git, *command], check=True, capture_output=True)
    return repo, venv


def _ci_run(repo: Path, venv: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "VENV": str(venv), "MEM_SHARED_DATA": str(repo.parent / "shared")}
    return subprocess.run(["bash", str(repo / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)


def test_ci_run_adds_the_real_data_extras_here_then_runs_test_sh_in_a_fresh_clone_alone(tmp_path):
    repo, venv = _stand_in_project(tmp_path, extras_status=5)
    result = _ci_run(repo, venv)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines[0] == f"bootstrap in {repo}" and f"extras: -m pytest -m real_data in {repo}" in lines
    assert "no real HotpotQA sample here" in result.stdout, "no extras (pytest's exit 5) is not a failure"
    (ran,) = [line for line in lines if line.startswith("test.sh in ")]
    folder = Path(ran.split()[2])
    assert folder.name == "mem-agent" and folder.parent != repo.parent and not folder.exists(), "removed after"
    assert ran.endswith(f"venv={venv} shared= data="), "nothing beside it, the borrowed .venv linked in"
    assert lines[-2:] == ["1", "== 9 passed in 1.00s =="], "a git clone of HEAD; pytest's summary is the last line"


def test_ci_run_fails_when_the_extras_fail_and_still_runs_the_fresh_clone(tmp_path):
    repo, venv = _stand_in_project(tmp_path, extras_status=1)
    result = _ci_run(repo, venv)
    assert result.returncode == 1 and result.stdout.splitlines()[-1] == "== 9 passed in 1.00s =="
