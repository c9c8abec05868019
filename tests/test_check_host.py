"""The preflight (`python -m mem_agent.check_host`) against fake checkouts built from the host double.

It runs as users run it, in its own process: it imports the checkout, stubs Ray (in-process) and
whatever the checkout imports that is not installed, and drives one step through the checkout's
own data source, rollout group task, rollout-id check, metrics and DP split, with our hooks
against a scripted engine. A compatible checkout passes; an incompatible one fails in one line
that names the checkout file (and line, where the error was raised inside it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mem_agent.check_host import build_parser
from mem_agent.host.namespace import router_address
from support.fake_trainer import write_fake_trainer
from support.hook_bench import SMALL_AGENT
from support.scripted_engine import scripted_engine

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def engine(tokenizer):
    with scripted_engine(tokenizer, lambda prompt_text, seed: "Fromereham") as running:
        yield running


def preflight(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **SMALL_AGENT}
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT / "examples"), str(PROJECT / "tests"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "mem_agent.check_host", *argv], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(("host", "protocol"), [("slime", "sglang"), ("vime", "vllm")])
def test_a_compatible_checkout_passes_one_step_through_its_own_code(tmp_path, engine, host, protocol):
    root = write_fake_trainer(tmp_path / host, host)
    result = preflight("--trainer-root", str(root), "--url", engine.url, "--protocol", protocol)
    assert result.returncode == 0, result.stdout + result.stderr
    line = result.stdout.strip()
    assert line.startswith(f"PASS {host} at {root}: 4 trajectories,") and "over dp=2" in line
    assert "stubbed: ray" in line, "Ray runs in-process"
    request_key = "input_ids" if protocol == "sglang" else "token_ids"
    assert engine.requests and all(request_key in body for body in engine.requests[-4:])


def test_host_flags_reach_the_hooks_through_the_checkout(tmp_path, engine):
    """--reward-key set as the parser stores it: the checkout's metrics and split read the dict rewards."""
    root = write_fake_trainer(tmp_path / "slime")
    flags = ["--host-flag", 'reward_key="score"', "--host-flag", 'log_reward_category="outcome"']
    result = preflight("--trainer-root", str(root), "--url", engine.url, "--protocol", "sglang", *flags)
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stdout + result.stderr


@pytest.mark.parametrize(
    ("incompatible", "flags", "expected"),
    [
        (
            "sample_counted_split",
            [],
            "FAIL split: slime/utils/dp_schedule.py: TypeError: build_dp_schedule() got an unexpected keyword "
            "argument 'rollout_indices'",
        ),
        (
            "float_rewards",
            ["--host-flag", 'reward_key="score"'],
            "FAIL metrics: slime/observability/rollout_metrics.py:2: TypeError:",
        ),
    ],
)
def test_an_incompatible_checkout_fails_in_one_line_naming_its_file(tmp_path, engine, incompatible, flags, expected):
    root = write_fake_trainer(tmp_path / "slime", incompatible=incompatible)
    result = preflight("--trainer-root", str(root), "--url", engine.url, "--protocol", "sglang", *flags)
    assert result.returncode == 1 and result.stdout.startswith(expected), result.stdout + result.stderr
    assert len(result.stdout.strip().splitlines()) == 1


def test_a_refused_flag_is_reported_at_the_generate_step(tmp_path, engine):
    root = write_fake_trainer(tmp_path / "vime", "vime")
    host_filter = (
        'dynamic_sampling_filter_path="vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"'
    )
    result = preflight(
        "--trainer-root", str(root), "--url", engine.url, "--protocol", "vllm", "--host-flag", host_filter
    )
    assert result.returncode == 1 and result.stdout.startswith("FAIL generate: ")
    assert "use mem_agent.dynamic_filter.keep_groups_with_reward_contrast" in result.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--trainer-root", "/nonexistent/slime", "--url", "http://127.0.0.1:9"], "is not a folder"),
        (["--trainer-root", "{tmp}", "--url", "http://127.0.0.1:9"], "not a slime or vime checkout"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:9", "--host-flag", "no-equals"], "NAME=VALUE"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:9", "--num-prompts", "0"], "positive integers"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1"], "http://HOST:PORT, the router as the trainer"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:8000/v1"], "no path, query or user"),
        (["--trainer-root", "{root}", "--url", "https://127.0.0.1:443"], "the hooks reach the router over http"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:port"], "must be http://HOST:PORT"),
        (["--trainer-root", "{both}", "--url", "http://127.0.0.1:9"], "holds both slime/ and vime/"),
    ],
)
def test_user_mistakes_are_one_line_with_exit_status_2(tmp_path, argv, message):
    root = write_fake_trainer(tmp_path / "checkout")
    both = write_fake_trainer(tmp_path / "both")
    (both / "vime").mkdir()
    argv = [item.format(tmp=tmp_path, root=root, both=both) for item in argv]
    result = preflight(*argv)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("url", "address"),
    [("http://127.0.0.1:30000", ("127.0.0.1", 30000)), ("http://[::1]:8000/", ("::1", 8000))],
)
def test_the_router_address_is_what_the_trainer_args_hold(url, address):
    assert router_address(url) == address


def test_help_names_both_ways_to_reach_a_server_and_the_host_flag_form():
    text = build_parser().format_help()
    assert "--local-stack" in text and "--url" in text and "reward_key=score" in text
    assert "--num-prompts" in text and "--prompts " not in text, "--prompts FILE is a template file elsewhere"
