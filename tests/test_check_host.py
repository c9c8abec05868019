"""The preflight (`python -m mem_agent.check_host`) against fake checkouts built from the host double.

It runs as users run it, in its own process, through what the checkout's train.py runs for
rollout 0: the launch script's own flags through the checkout's parser and validation, its
create_rollout_manager, and RolloutManager.generate(0) (data source, rollout function, our hooks
against a scripted engine, the checkout's metrics, our convert, its DP split). The fake
checkouts are laid out like slime HEAD and like current vime (data source at
vime/data/data_source.py, convert and split in vime/data/batch_builder.py), so a module path
written into the preflight would fail one of them. Each kind of break a host could ship fails in
one line that names the checkout file and line it came from.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mem_agent.check_host import build_parser, host_flag_words
from mem_agent.host.namespace import router_address
from support.fake_trainer import write_fake_trainer
from support.hook_bench import SMALL_AGENT
from support.scripted_engine import scripted_engine

PROJECT = Path(__file__).resolve().parents[1]
PROTOCOL = {"slime": "sglang", "vime": "vllm"}


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


def check(root: Path, host: str, engine, *flags: str) -> subprocess.CompletedProcess:
    return preflight("--trainer-root", str(root), "--url", engine.url, "--protocol", PROTOCOL[host], *flags)


@pytest.mark.parametrize("host", ["slime", "vime"])
def test_a_compatible_checkout_passes_one_step_through_its_own_train_path(tmp_path, engine, host):
    root = write_fake_trainer(tmp_path / host, host)
    if host == "vime":  # current vime's layout: the paths come from its own parser and validation
        assert (root / "vime/data/data_source.py").is_file() and not (root / "vime/rollout/data_source.py").exists()
    sent = len(engine.requests)
    result = check(root, host, engine)
    assert result.returncode == 0, result.stdout + result.stderr
    line = result.stdout.strip()
    assert line.startswith(f"PASS {host} at {root}: 4 trajectories,") and "over dp=2" in line
    assert "launch words parsed by the host, in" in line
    for stand_in in ("Ray in-process", "Megatron-LM's parser", f"the {PROTOCOL[host]} engine's parser"):
        assert stand_in in line, stand_in
    assert f"{host}.ray.rollout.start_rollout_servers (no engines" in line, "the engine start-up is stood in"
    request_key = "input_ids" if host == "slime" else "token_ids"
    assert len(engine.requests) > sent and all(request_key in body for body in engine.requests[sent:])


def test_host_flags_reach_the_hooks_through_the_checkouts_parser(tmp_path, engine):
    """--reward-key as a command-line flag: the checkout's parser stores it, its metrics and split read dicts."""
    root = write_fake_trainer(tmp_path / "slime")
    flags = ["--host-flag", 'reward_key="score"', "--host-flag", 'log_reward_category="outcome"']
    result = check(root, "slime", engine, *flags)
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stdout + result.stderr


BREAKS = [
    (
        "slime",
        "sample_field_renamed",
        "FAIL sample: slime/utils/types.py:",
        "rollout_log_probs (mem_agent/host/trajectory_samples.py:",
    ),
    ("vime", "sample_field_renamed", "FAIL sample: vime/utils/types.py:", "declares no such field"),
    ("slime", "renamed_everywhere", "FAIL sample: slime/utils/types.py:", "rollout_log_probs"),
    ("slime", "split_key_renamed", "FAIL convert: slime/ray/rollout.py:", "emits rollout_log_probs, which the host"),
    ("vime", "split_key_renamed", "FAIL convert: vime/data/batch_builder.py:", "emits rollout_log_probs"),
    ("slime", "convert_requires_key", "FAIL generate: slime/ray/rollout.py:", "AssertionError"),
    ("vime", "convert_requires_key", "FAIL generate: vime/data/batch_builder.py:", "AssertionError"),
    ("slime", "split_reads_new_key", "FAIL generate: slime/ray/rollout.py:", "KeyError: 'prompt_starts'"),
    ("vime", "split_reads_new_key", "FAIL generate: vime/data/batch_builder.py:", "KeyError: 'prompt_starts'"),
    ("slime", "generate_rollout_removed", "FAIL manager: slime/ray/rollout.py:", "no attribute 'generate_rollout'"),
    ("vime", "generate_rollout_removed", "FAIL manager: vime/ray/rollout.py:", "no attribute 'generate_rollout'"),
    ("slime", "train_removed", "FAIL train: train.py: missing", "the trainer's entry point"),
    ("slime", "sample_counted_split", "FAIL generate: slime/ray/rollout.py:", "unexpected keyword argument"),
    ("slime", "load_function_removed", "FAIL manager: slime/ray/rollout.py:", "cannot import name 'load_function'"),
    ("slime", "group_task_removed", "FAIL generate: slime/rollout/sglang_rollout.py:", "'generate_and_rm_group'"),
    ("slime", "convert_called_differently", "FAIL generate: slime/ray/rollout.py:", "unexpected keyword argument"),
    ("slime", "flag_removed", "FAIL flags: slime/utils/arguments.py:", "--custom-reward-post-process-path"),
]


@pytest.mark.parametrize(("host", "incompatible", "prefix", "detail"), BREAKS)
def test_each_kind_of_break_fails_in_one_line_naming_its_file(tmp_path, engine, host, incompatible, prefix, detail):
    """A break that used to pass silently (a renamed Sample field, a key the split no longer
    forwards) fails as surely as one that raises, at the checkout's file and line."""
    root = write_fake_trainer(tmp_path / host, host, incompatible=incompatible)
    result = check(root, host, engine)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(prefix) and detail in result.stdout, result.stdout + result.stderr[-2000:]
    assert len(result.stdout.strip().splitlines()) == 1


def test_float_rewards_under_a_reward_key_fail_at_the_checkout_line(tmp_path, engine):
    root = write_fake_trainer(tmp_path / "slime", incompatible="float_rewards")
    result = check(root, "slime", engine, "--host-flag", 'reward_key="score"')
    assert result.returncode == 1 and result.stdout.startswith("FAIL generate: slime/ray/rollout.py:"), result.stdout
    assert "TypeError" in result.stdout


def test_a_refused_flag_is_reported_at_the_generate_step(tmp_path, engine):
    root = write_fake_trainer(tmp_path / "vime", "vime")
    host_filter = (
        'dynamic_sampling_filter_path="vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"'
    )
    result = check(root, "vime", engine, "--host-flag", host_filter)
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


def test_a_launch_setting_the_script_refuses_is_a_user_mistake(tmp_path, monkeypatch):
    """The flags come from the launch script's dry run: what it refuses, the preflight reports, exit 2."""
    root = write_fake_trainer(tmp_path / "slime")
    monkeypatch.setenv("MEM_MODE", "bogus")
    result = preflight("--trainer-root", str(root), "--url", "http://127.0.0.1:9")
    assert result.returncode == 2 and "the launch script refused these settings" in result.stderr, result.stderr
    assert "MEM_MODE=bogus" in result.stderr


@pytest.mark.parametrize(
    ("items", "words"),
    [
        (['reward_key="score"'], ["--reward-key", "score"]),
        (["use_tis=true", "partial_rollout=false"], ["--use-tis"]),
        (['rollout_stop=["a", "b"]', "eps_clip=0.3"], ["--rollout-stop", "a", "b", "--eps-clip", "0.3"]),
    ],
)
def test_host_flags_become_the_words_of_a_command_line(items, words):
    assert host_flag_words(items) == words


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
