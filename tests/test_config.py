"""Settings: defaults, parsing from the environment, and one-line errors that name the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from mem_agent.settings.config import (
    ENV_NAMES,
    AgentMode,
    ConfigError,
    MemAgentConfig,
    RetrieverKind,
    config_problems,
    settings_table_markdown,
)

SETTINGS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def test_defaults_are_the_memagent_recipe():
    config = MemAgentConfig.from_env({})
    assert (config.chunk_tokens, config.max_memory_tokens, config.max_final_tokens) == (5000, 1024, 1024)
    assert config.max_chunks == 8 and config.chunk_cap_tokens == 40_000, "MemAgent's training cut: max_chunks 8"
    assert config.mode is AgentMode.MEMAGENT and config.thinking is False


def test_rememr1_mode_defaults_to_rememr1s_budgets_below_what_the_user_sets():
    """ReMemR1's recipe: memory and answer 2048 tokens (MemAgent's 1024); a set value still wins."""
    config = MemAgentConfig.from_env({"MEM_MODE": "rememr1"})
    assert (config.max_memory_tokens, config.max_final_tokens, config.max_chunks) == (2048, 2048, 8)
    config = MemAgentConfig.from_env({"MEM_MODE": "rememr1", "MEM_MAX_MEMORY": "700"}, max_final_tokens=300)
    assert (config.max_memory_tokens, config.max_final_tokens) == (700, 300)
    assert MemAgentConfig.from_env({}, mode="rememr1").max_memory_tokens == 2048


def test_every_setting_has_its_own_variable_and_reads_its_default_back_from_text():
    """What a launch script forwards is text: each declared default, written as the scripts write it,
    parses back to the same settings."""
    assert len(set(ENV_NAMES.values())) == len(ENV_NAMES)
    assert all(env.startswith("MEM_") for env in ENV_NAMES.values())
    as_text = {env: _as_env(value) for env, value in MemAgentConfig().recorded().items() if value != ""}
    as_text = {ENV_NAMES[field]: text for field, text in as_text.items()}
    assert MemAgentConfig.from_env(as_text) == MemAgentConfig()


def _as_env(value: object) -> str:
    """A recorded value as a person sets it: a switch as 0 or 1."""
    return str(int(value)) if isinstance(value, bool) else str(value).lower()


def test_values_are_read_from_the_environment():
    env = {
        "MEM_CHUNK_TOKENS": " 256 ",
        "MEM_MAX_CHUNKS": "8",
        "MEM_MODE": "ReMemR1",
        "MEM_THINKING": " 1",
        "MEM_RETRIEVER": "bm25",
        "MEM_REMEMR1_ALPHA": "1",
        "MEM_REQUEST_TIMEOUT": "2.5",
    }
    config = MemAgentConfig.from_env(env)
    assert config.chunk_tokens == 256 and config.max_chunks == 8 and config.chunk_cap_tokens == 2048
    assert config.mode is AgentMode.REMEMR1 and config.thinking is True
    assert config.retriever is RetrieverKind.BM25 and config.rememr1_alpha == 1.0
    assert config.request_timeout_s == 2.5


def test_empty_variables_mean_the_default():
    assert MemAgentConfig.from_env({"MEM_CHUNK_TOKENS": "", "MEM_MODE": "  "}) == MemAgentConfig()


def test_keyword_overrides_win_over_the_environment():
    config = MemAgentConfig.from_env({"MEM_CHUNK_TOKENS": "100"}, chunk_tokens=64, mode="rememr1")
    assert config.chunk_tokens == 64 and config.mode is AgentMode.REMEMR1


@pytest.mark.parametrize(
    ("variable", "value", "default"),
    [
        ("MEM_CHUNK_TOKENS", "0", "5000"),
        ("MEM_CHUNK_TOKENS", "-5", "5000"),
        ("MEM_CHUNK_TOKENS", "5k", "5000"),
        ("MEM_MAX_MEMORY", "1.5", "1024"),
        ("MEM_MAX_FINAL", "0", "1024"),
        ("MEM_MAX_CHUNKS", "-1", "8"),
        ("MEM_MODE", "memgpt", "memagent"),
        ("MEM_THINKING", "2", "0"),
        ("MEM_THINKING", "yes", "0"),
        ("MEM_FOLD_UNICODE", "true", "0"),
        ("MEM_REMEMR1_ALPHA", "1.2", "0.8"),
        ("MEM_REQUEST_TIMEOUT", "0", "600.0"),
        ("MEM_REQUEST_TIMEOUT", "inf", "600.0"),
        ("MEM_REQUEST_TIMEOUT", "1e999", "600.0"),
        ("MEM_REMEMR1_ALPHA", "nan", "0.8"),
        ("MEM_MAX_RETRIES", "many", "3"),
        ("MEM_PROTOCOL", "grpc", "auto"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_variable_and_its_default(variable, value, default):
    with pytest.raises(ConfigError) as error:
        MemAgentConfig.from_env({variable: value})
    [problem] = error.value.problems
    assert problem.startswith(f"{variable}={value} ") and problem.endswith(f"(default {default})")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("variable", ["MEM_CHUNK_TOKENS", "MEM_MAX_MEMORY", "MEM_MAX_RETRIES"])
def test_an_integer_beyond_what_servers_parse_is_refused(variable):
    """A token limit of 10**20 would pass as a Python int and then fail every request."""
    [problem] = config_problems({variable: "99999999999999999999999"})
    assert problem.startswith(f"{variable}=99999999999999999999999 ") and "2147483647" in problem


@pytest.mark.parametrize("variable", ["MEM_PROMPTS", "MEM_CHUNK_TOKENS", "MEM_MODE"])
def test_a_value_holding_a_line_break_is_refused_naming_the_variable(variable):
    [problem] = config_problems({variable: "256\nMEM_MODE=rememr1"})
    assert problem.startswith(f"{variable} ") and "\n" not in problem


def test_bad_values_from_code_are_rejected_too():
    with pytest.raises(ConfigError, match="MEM_CHUNK_TOKENS=0"):
        MemAgentConfig(chunk_tokens=0)
    with pytest.raises(ConfigError, match="MEM_MODE=memgpt"):
        MemAgentConfig(mode="memgpt")


def test_the_settings_page_holds_the_generated_table():
    """docs/settings.md documents exactly the settings the code reads, with the code's defaults."""
    assert settings_table_markdown() in SETTINGS_PAGE.read_text()


def test_config_problems_names_every_bad_value_not_just_the_first():
    """A launch script shows a person all their mistakes at once; from_env stops at the first."""
    env = {"MEM_CHUNK_TOKENS": "-5", "MEM_MODE": "memgpt", "MEM_MAX_FINAL": "64", "MEM_REMEMR1_ALPHA": "2"}
    problems = config_problems(env)
    assert [problem.split("=")[0] for problem in problems] == ["MEM_CHUNK_TOKENS", "MEM_MODE", "MEM_REMEMR1_ALPHA"]
    with pytest.raises(ConfigError, match="MEM_CHUNK_TOKENS=-5"):
        MemAgentConfig.from_env(env)


def test_config_problems_is_empty_for_usable_settings_and_empty_values():
    assert config_problems({"MEM_CHUNK_TOKENS": "256", "MEM_MODE": "", "MEM_THINKING": "1"}) == []
    assert config_problems({}) == []


def test_config_problems_reports_a_bad_template_file_and_rules_between_settings(tmp_path):
    """A template file is checked where the config is built: the launch scripts' check sees it too."""
    broken = tmp_path / "prompts.toml"
    broken.write_text("this is not toml [")
    assert len(problems := config_problems({"MEM_PROMPTS": str(broken)})) == 1
    assert problems[0].startswith("MEM_PROMPTS=") and str(broken) in problems[0]
    assert config_problems({"MEM_PROMPTS": str(tmp_path / "missing.toml")})[0].startswith("MEM_PROMPTS=")


def test_config_problems_catches_a_variable_one_typo_from_a_setting():
    """MEM_CHUNK_TOKEN would otherwise be ignored silently and the default used; the package's own
    non-setting variables (the stack's URLs, the tests' data folder) are never reported."""
    env = {
        "MEM_CHUNK_TOKEN": "4000",
        "MEM_MAX_MEMROY": "256",
        "MEM_ROUTER_URL": "http://127.0.0.1:1",
        "MEM_SHARED_DATA": "/data",
    }
    problems = config_problems(env)
    assert [problem.split()[0] for problem in problems] == ["MEM_CHUNK_TOKEN", "MEM_MAX_MEMROY"]
    assert "MEM_CHUNK_TOKENS" in problems[0] and "MEM_MAX_MEMORY" in problems[1], "the nearest setting is named"


def test_the_evaluation_commands_read_whole_documents_unless_a_cap_is_asked_for(monkeypatch):
    """MemAgent cuts training documents at 8 chunks but evaluates them whole: the evaluator and
    run_document do the same, unless MEM_MAX_CHUNKS or --max-chunks asks for a cap."""
    from mem_agent.inference.agent_flags import AgentFlags, config_from_args

    monkeypatch.delenv("MEM_MAX_CHUNKS", raising=False)
    assert config_from_args(AgentFlags()).max_chunks == 0
    assert config_from_args(AgentFlags(max_chunks=3)).max_chunks == 3
    monkeypatch.setenv("MEM_MAX_CHUNKS", "6")
    assert config_from_args(AgentFlags()).max_chunks == 6
    assert MemAgentConfig.from_env().max_chunks == 6, "the hooks read the variable itself"


def test_memagents_final_turn_takes_the_memory_limit_unless_mem_max_final_is_set():
    """MemAgent's loop generates the final answer with max_memorization_length: an unset MEM_MAX_FINAL
    follows MEM_MAX_MEMORY (equal at the defaults); setting it gives the final turn its own limit."""
    assert MemAgentConfig.from_env({"MEM_MAX_MEMORY": "700"}).max_final_tokens == 700
    assert MemAgentConfig.from_env({}, max_memory_tokens=600).max_final_tokens == 600
    assert MemAgentConfig.from_env({"MEM_MAX_MEMORY": "700", "MEM_MAX_FINAL": "300"}).max_final_tokens == 300
    assert MemAgentConfig.from_env({"MEM_MODE": "rememr1", "MEM_MAX_MEMORY": "700"}).max_final_tokens == 2048
