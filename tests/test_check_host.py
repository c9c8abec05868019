"""The preflight (`python -m mem_agent.check_host`) against fake checkouts built from the host double.

It runs as users run it, in its own process, through what the checkout's train.py runs for
rollout 0: the training launch's own flags (its plan and recipe, in-process) through the checkout's
parser and validation, its create_rollout_manager, and RolloutManager.generate(0) (data source,
rollout function, our hooks against a scripted engine, the checkout's metrics, our convert, its
DP split). The fake checkouts are laid out like slime HEAD and like current vime (data source at
vime/data/data_source.py, convert and split in vime/data/batch_builder.py, the engine start-up
imported inside RolloutManager.__init__), so a module path written into the preflight would fail
one of them. Each kind of break a host could ship, and each way a train.py can end or block its
own import, fails in one line that names the checkout file and line (or the flag) it came from.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mem_agent.check_host import build_parser
from mem_agent.launch.recipe import Group
from mem_agent.preflight import pipeline
from mem_agent.preflight.checks import CheckFailed
from mem_agent.preflight.host_args import launch_words
from mem_agent.preflight.pipeline import PreflightOptions, host_flag_words, read_launch, router_address, run_preflight
from support.fake_trainer import write_fake_trainer
from support.hook_bench import SMALL_AGENT
from support.proc_state import still_running
from support.scripted_engine import scripted_engine
from support.scripts import write_trainer_files

PROJECT = Path(__file__).resolve().parents[1]
PROTOCOL = {"slime": "sglang", "vime": "vllm"}
START_UP = {"slime": "slime.ray.rollout", "vime": "vime.backends.vllm_utils.deployment"}


@pytest.fixture(scope="module")
def engine(tokenizer):
    with scripted_engine(tokenizer, lambda prompt_text, seed: "Fromereham") as running:
        yield running


def preflight(*argv: str, **settings: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **SMALL_AGENT, **settings}
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT / "examples"), str(PROJECT / "tests"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "mem_agent.check_host", *argv], env=env, capture_output=True, text=True, timeout=300
    )


def check(root: Path, host: str, engine, *flags: str, **settings: str) -> subprocess.CompletedProcess:
    return preflight("--trainer-root", str(root), "--url", engine.url, "--protocol", PROTOCOL[host], *flags, **settings)


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
    assert f"{START_UP[host]}.start_rollout_servers (no engines" in line, "the start-up the manager reaches"
    request_key = "input_ids" if host == "slime" else "token_ids"
    assert len(engine.requests) > sent and all(request_key in body for body in engine.requests[sent:])
    assert str(root / "train.py") in result.stderr.splitlines()[0], "it says first that it runs the checkout's code"
    assert "Unclosed" not in result.stderr, "the hooks' HTTP sessions are closed after the step"


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
    ("vime", "dynamic_batch_flag_removed", "FAIL flags: vime/utils/arguments.py:", "--use-dynamic-batch-size"),
    ("slime", "start_up_renamed", "FAIL manager: slime/ray/rollout.py:", "start_rollout_servers"),
    ("vime", "start_up_renamed", "FAIL manager: vime/ray/rollout.py:", "start_rollout_servers"),
    ("slime", "exits_at_import", "FAIL train: train.py:5:", "SystemExit"),
    ("vime", "interrupted_at_import", "FAIL train: train.py:3:", "KeyboardInterrupt"),
    ("slime", "os_exit_at_import", "FAIL train: train.py:", ""),
]


@pytest.mark.parametrize(("host", "incompatible", "prefix", "detail"), BREAKS)
def test_each_kind_of_break_fails_in_one_line_naming_its_file(tmp_path, engine, host, incompatible, prefix, detail):
    """A break that raises nowhere (a renamed Sample field, a key the split no longer forwards, a
    host flag the host's parser would ignore) fails as surely as one that raises, at the checkout's
    file and line; a train.py that exits or is interrupted while being imported is a FAIL, never
    the preflight's own exit status."""
    root = write_fake_trainer(tmp_path / host, host, incompatible=incompatible)
    result = check(root, host, engine)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(prefix) and detail in result.stdout, result.stdout + result.stderr[-2000:]
    assert len(result.stdout.strip().splitlines()) == 1


def test_a_train_py_that_blocks_at_import_fails_within_the_bound_and_leaves_nothing_running(tmp_path, engine):
    root = write_fake_trainer(tmp_path / "slime", incompatible="hangs_at_import")
    started = time.monotonic()
    result = check(root, "slime", engine, "--import-timeout", "5")
    elapsed = time.monotonic() - started
    assert result.returncode == 1 and result.stdout.startswith("FAIL train: train.py:"), result.stdout + result.stderr
    assert "--import-timeout" in result.stdout and len(result.stdout.strip().splitlines()) == 1
    assert elapsed < 5 + 45, f"{elapsed:.1f} s: the bound, plus the launch script and the child's start"
    assert result.stderr.count("train.py") >= 2, "a progress line while it waits, after the first line"
    assert not still_running(int((root / "import.pid").read_text())), "the importing process is killed"


def test_a_ctrl_c_while_train_py_is_imported_stops_it_and_exits_130(tmp_path):
    """The child leads its own process group: the user's Ctrl-C reaches the preflight, which stops
    the child, instead of the child reporting the interrupt as train.py's."""
    root = write_fake_trainer(tmp_path / "slime", incompatible="hangs_at_import")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT / "examples"), str(PROJECT / "tests")])}
    argv = [sys.executable, "-m", "mem_agent.check_host", "--trainer-root", str(root), "--url", "http://127.0.0.1:9"]
    # A terminal's foreground job takes SIGINT; a job started in the background by a script without job
    # control (CI's runner, `nohup ... &`) inherits it ignored, and so would the preflight.
    running = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not (root / "import.pid").exists():
        assert running.poll() is None and time.monotonic() < deadline, running.communicate()
        time.sleep(0.1)
    os.killpg(running.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends to the foreground group
    stdout, _ = running.communicate(timeout=60)
    assert running.returncode == 130 and stdout == b"", stdout
    assert not still_running(int((root / "import.pid").read_text()))


NEW_MEGATRON_FLAGS = ["--make-vocab-size-divisible-by", "128", "--apply-layernorm-1p"]


@pytest.mark.parametrize("owner", ["megatron", "host"])
def test_the_megatron_stand_in_is_built_from_the_launchs_megatron_groups(tmp_path, engine, monkeypatch, owner):
    """A Megatron flag the recipe starts to pass is accepted as soon as a megatron group holds it
    (typed by its value: no list in the preflight to keep up); in a host group, the host's parser
    is asked and refuses it, naming it."""
    root = write_fake_trainer(tmp_path / "slime")
    for setting, value in SMALL_AGENT.items():
        monkeypatch.setenv(setting, value)
    recipe = pipeline.recipe
    monkeypatch.setattr(
        pipeline, "recipe", lambda plan: (*recipe(plan), Group("NEW_ARGS", owner, tuple(NEW_MEGATRON_FLAGS)))
    )
    options = PreflightOptions(trainer_root=root, url=engine.url, protocol="sglang")
    if owner == "megatron":
        assert run_preflight(options, progress=lambda line: None).startswith(f"PASS slime at {root}:")
        return
    with pytest.raises(CheckFailed) as failure:
        run_preflight(options, progress=lambda line: None)
    assert failure.value.stage == "flags" and failure.value.where.startswith("slime/utils/arguments.py:")
    assert NEW_MEGATRON_FLAGS[0] in failure.value.detail


def test_words_the_user_appends_that_the_host_does_not_know_are_named_as_stood_in(tmp_path, engine):
    root = write_fake_trainer(tmp_path / "vime", "vime")
    result = check(
        root, "vime", engine, EXTRA_ARGS="--apply-layernorm-1p --rollout-top-p 1.0", EXTRA_BACKEND_ARGS="--vllm-x 1"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    stand_ins = result.stdout.split("(stood in: ", 1)[1]
    assert "--apply-layernorm-1p" in stand_ins and "--rollout-top-p" not in stand_ins, "the host's own flag"


def test_the_launch_is_the_recipe_at_the_preflights_scale_with_the_users_words(tmp_path, monkeypatch):
    """The preflight's launch is the training launch's recipe with one rollout of its few prompts,
    its scratch --ref-load, and the user's EXTRA_ARGS as given, in `user` groups."""
    files = write_trainer_files(tmp_path)
    monkeypatch.setenv("EXTRA_ARGS", "--use-tis --tis-clip 2")
    monkeypatch.setenv("EXTRA_BACKEND_ARGS", "--sglang-enable-metrics")
    monkeypatch.setenv("ASYNC", "1")  # the preflight's own schedule and cluster, whatever the user's
    (tmp_path / "work").mkdir()
    entry, groups = read_launch(
        files.checkout("slime"),
        "slime",
        PreflightOptions(files.checkout("slime"), num_prompts=3, n_samples=2, dp_size=2),
        hf_checkpoint=str(tmp_path / "hf"),
        prompts=tmp_path / "train.jsonl",
        workdir=tmp_path / "work",
    )
    assert entry == files.checkout("slime") / "train.py"
    words = launch_words(groups)
    for flag, value in {
        "--num-rollout": "1",
        "--rollout-batch-size": "3",
        "--n-samples-per-prompt": "2",
        "--global-batch-size": "2",
        "--actor-num-gpus-per-node": "2",
        "--ref-load": str(tmp_path / "work" / "torch_dist"),
    }.items():
        assert words[words.index(flag) + 1] == value, flag
    assert "--colocate" in words
    users = [list(group.words) for group in groups if group.owner == "user"]
    assert users == [["--sglang-enable-metrics"], ["--use-tis", "--tis-clip", "2"]]


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
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:9", "--num-prompts", "0"], "--num-prompts 0 must be"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1"], "http://HOST:PORT, the router as the trainer"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:8000/v1"], "no path, query or user"),
        (["--trainer-root", "{root}", "--url", "https://127.0.0.1:443"], "the hooks reach the router over http"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:port"], "must be http://HOST:PORT"),
        (["--trainer-root", "{both}", "--url", "http://127.0.0.1:9"], "holds both slime/ and vime/"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:9", "--import-timeout", "0"], "--import-timeout"),
        (["--trainer-root", "{root}"], "--url or --local-stack"),
        (["--trainer-root", "{root}", "--url", "http://127.0.0.1:9", "--local-stack"], "--url or --local-stack"),
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
    """The flags come from the training launch's checks: what they refuse, the preflight reports, exit 2."""
    root = write_fake_trainer(tmp_path / "slime")
    monkeypatch.setenv("MEM_MODE", "bogus")
    result = preflight("--trainer-root", str(root), "--url", "http://127.0.0.1:9")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) >= 1, result.stderr
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
