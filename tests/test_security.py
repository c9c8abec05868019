"""Safe defaults: no secrets in the repository, loopback-only servers, no execution of model output."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import PROJECT_ROOT

from mem_agent.launch.eval_settings import EvalSettings
from mem_agent.serving.cpu_stack import StackSettings, router_argv, vllm_cpu_argv

TOKEN_PATTERNS = {
    "Hugging Face token": re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),
    "OpenAI-style key": re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "W&B key assignment": re.compile(r"WANDB_API_KEY\s*=\s*['\"]?[0-9a-f]{40}\b"),
    "private key block": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
}


def _tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    return [PROJECT_ROOT / name for name in listed.stdout.splitlines() if (PROJECT_ROOT / name).is_file()]


def test_no_tracked_file_contains_a_token_like_string():
    files = _tracked_files()
    assert len(files) > 40, "git ls-files sees the project"
    hits = [
        f"{path.relative_to(PROJECT_ROOT)}: {kind}"
        for path in files
        for kind, pattern in TOKEN_PATTERNS.items()
        if pattern.search(path.read_text(errors="ignore"))
    ]
    assert hits == []


def test_the_scanner_would_catch_a_planted_token():
    planted = "token = 'hf_" + "a1B2" * 9 + "'"
    assert TOKEN_PATTERNS["Hugging Face token"].search(planted)


def test_no_python_or_shell_evaluates_text():
    """Model output and data are never executed: no eval/exec in Python, no eval in shell (a script
    hands its settings to Python, which runs what it launches as argument vectors)."""
    offenders = []
    for path in _tracked_files():
        text = path.read_text(errors="ignore")
        if path.suffix == ".py" and re.search(r"(?<![\w.])(eval|exec)\(", text):
            offenders.append(str(path))
        if path.suffix == ".sh" and re.search(r"^\s*eval\s", text, re.MULTILINE):
            offenders.append(str(path))
    assert offenders == []


def test_local_servers_bind_to_loopback_by_default(tiny_model_path):
    settings = StackSettings()
    assert settings.host == "127.0.0.1"
    server = vllm_cpu_argv(tiny_model_path, settings.host, 8000, settings)
    assert server[server.index("--host") + 1] == "127.0.0.1"
    router = router_argv(["http://127.0.0.1:8000"], settings.host, 8001, 8002)
    assert router[router.index("--host") + 1] == "127.0.0.1"
    assert router[router.index("--prometheus-host") + 1] == "127.0.0.1"


def test_scripts_default_to_loopback_for_every_listener():
    from mem_agent.launch.train_settings import TrainSettings

    scripts = PROJECT_ROOT / "examples" / "mem_agent"
    assert EvalSettings().host == "127.0.0.1", "run-eval.sh's servers and router listen on loopback unless HOST says"
    train = (scripts / "run-qwen3-4b-train.sh").read_text()
    assert TrainSettings().ray_dashboard_host == "127.0.0.1" and "0.0.0.0" not in train


def test_the_settings_object_never_holds_a_secret():
    from mem_agent.settings.config import ENV_NAMES

    assert not [env for env in ENV_NAMES.values() if set(env.split("_")) & {"KEY", "TOKEN", "SECRET", "PASSWORD"}]
