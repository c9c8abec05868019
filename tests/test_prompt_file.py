"""Template files (MEM_PROMPTS): the format, and every way a file can be wrong, reported in one line."""

from __future__ import annotations

import asyncio
import hashlib
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mem_agent import eval_ruler_hqa, rollout, run_document
from mem_agent.settings.config import ConfigError, MemAgentConfig
from mem_agent.templates.template_file import (
    Assembly,
    MemoryText,
    PromptFileError,
    Thinking,
    dump_prompt_file,
    load_prompt_file,
    toml_string,
)
from support.host.args import host_args
from support.host.rollout_loop import sampling_params
from support.host.sample import Sample

MEMORY_TURN = "Query: {problem}\nLog: {memory}\nExcerpt: {section}\nA literal {{brace}} stays.\n"
FINAL_TURN = "Query: {problem}\nLog: {memory}\nAnswer in \\boxed{{}}.\n"


def _write(tmp_path, text: str, name: str = "prompts.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _valid(**changes) -> str:
    """A valid memagent file's text, with some values changed or (None) removed."""
    fields = {
        "mode": "memagent",
        "assembly": Assembly.TOKENS,
        "thinking": Thinking.TEMPLATE,
        "memory": MemoryText.RESPONSE,
        "templates": {"memory_turn": MEMORY_TURN, "final_turn": FINAL_TURN, "no_memory": "Empty log"},
        "source": {"name": "ours", "commit": "none"},
    }
    templates = {**fields["templates"], **changes.pop("templates", {})}
    fields.update(changes, templates={key: value for key, value in templates.items() if value is not None})
    return dump_prompt_file(**fields)


@given(st.text())
def test_any_text_survives_the_toml_writer_exactly(text):
    assert tomllib.loads(f"value = {toml_string(text)}")["value"] == text


def test_a_written_file_reads_back_with_its_hash_and_source(tmp_path):
    path = _write(tmp_path, _valid())
    file = load_prompt_file(path, "memagent")
    assert (file.memory_turn, file.final_turn, file.no_memory, file.no_recall) == (
        MEMORY_TURN,
        FINAL_TURN,
        "Empty log",
        None,
    )
    assert (file.assembly, file.thinking, file.memory) == (Assembly.TOKENS, Thinking.TEMPLATE, MemoryText.RESPONSE)
    facts = file.facts()
    assert facts["path"] == str(path.resolve()) and facts["source"] == {"name": "ours", "commit": "none"}
    assert facts["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_thinking_and_memory_have_the_authors_defaults(tmp_path):
    lines = [line for line in _valid().splitlines() if not line.startswith(("thinking", "memory ="))]
    file = load_prompt_file(_write(tmp_path, "\n".join(lines)))
    assert file.thinking is Thinking.TEMPLATE and file.memory is MemoryText.RESPONSE


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{problem} {memory}", "templates.memory_turn: missing placeholder {section}"),
        ("{problem} {memory} {section} {memory}", "templates.memory_turn: placeholder {memory} appears 2 times"),
        ("{prompt} {memory} {section}", "templates.memory_turn: unknown placeholder {prompt}"),
        ("{problem} {memory} {section} {recalled}", "templates.memory_turn: unknown placeholder {recalled}"),
        ("{problem} {memory} {section} {}", "templates.memory_turn: positional placeholder {}"),
        ("{problem} {memory} {section} {0}", "templates.memory_turn: positional placeholder {0}"),
        ("{problem} {memory!r} {section}", "placeholder {memory}: conversions and format specs are not allowed"),
        ("{problem} {memory:>9} {section}", "placeholder {memory}: conversions and format specs are not allowed"),
        ("{problem} {memory.upper} {section}", "unknown placeholder {memory.upper}"),
        ("{problem} {memory} {section} }", "Single '}' encountered in format string"),
        ("{problem} {memory} {section} {", "Single '{' encountered in format string"),
    ],
)
def test_placeholder_mistakes_are_one_line_errors(tmp_path, template, message):
    path = _write(tmp_path, _valid(templates={"memory_turn": template}))
    with pytest.raises(PromptFileError) as error:
        load_prompt_file(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_valid().replace("version = 1", "version = 2"), "version = 2: this mem_agent reads version = 1"),
        (_valid().replace('mode = "memagent"', 'mode = "memagnet"'), "mode = 'memagnet' must be one of"),
        (_valid().replace('assembly = "tokens"\n', ""), "assembly is missing (one of tokens, text)"),
        (_valid(thinking=Thinking.ON).replace('"on"', '"maybe"'), "thinking = 'maybe' must be one of"),
        (_valid(memory=MemoryText.AFTER_THINK), 'memory = "after-think" needs assembly = "text"'),
        (_valid(templates={"no_memory": None}), "templates.no_memory is missing"),
        (_valid().replace('no_memory = "Empty log"', "no_memory = 3"), "templates.no_memory must be a string"),
        (_valid(templates={"no_recall": "x"}), "unknown key templates.no_recall"),
        (_valid() + "extra = 1\n", "unknown key templates.extra"),
        ("colour = 1\n" + _valid(), "unknown key colour"),
        (_valid().replace('commit = "none"', "commit = 7"), "source.commit must be a string"),
        (_valid().replace("[templates]", "[templates\n"), "not valid TOML"),
        ("version = 1\n", "mode is missing"),
    ],
)
def test_file_mistakes_are_one_line_errors(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(PromptFileError) as error:
        load_prompt_file(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_rememr1_file_needs_the_recall_placeholder_and_text(tmp_path):
    recalled = {"memory_turn": "{problem}{recalled}{memory}{section}", "final_turn": "{problem}{recalled}{memory}"}
    path = _write(tmp_path, _valid(mode="rememr1", templates=recalled))
    with pytest.raises(PromptFileError, match=r"templates\.no_recall is missing"):
        load_prompt_file(path)
    path = _write(tmp_path, _valid(mode="rememr1", templates={**recalled, "no_recall": "None revisited"}))
    assert load_prompt_file(path, "rememr1").no_recall == "None revisited"
    path = _write(tmp_path, _valid(mode="rememr1", templates={"no_recall": "None revisited"}))
    with pytest.raises(PromptFileError, match=r"templates.memory_turn: missing placeholder \{recalled\}"):
        load_prompt_file(path)


def test_unreadable_files_are_one_line_errors(tmp_path):
    with pytest.raises(PromptFileError, match="cannot read: No such file or directory"):
        load_prompt_file(tmp_path / "absent.toml")
    with pytest.raises(PromptFileError, match="cannot read: Is a directory"):
        load_prompt_file(tmp_path)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"version = 1\n\xff\xfe")
    with pytest.raises(PromptFileError, match=r"not UTF-8 \(byte 12\)"):
        load_prompt_file(binary)


# --- the setting ------------------------------------------------------------------------------


def test_mem_prompts_is_checked_when_the_settings_are_read(tmp_path):
    good = _write(tmp_path, _valid())
    assert MemAgentConfig.from_env({"MEM_PROMPTS": str(good)}).prompts == str(good)
    bad = _write(tmp_path, _valid(templates={"final_turn": "{problem}"}), "bad.toml")
    with pytest.raises(ConfigError) as error:
        MemAgentConfig.from_env({"MEM_PROMPTS": str(bad)})
    assert str(error.value) == f"MEM_PROMPTS={bad}: templates.final_turn: missing placeholder {{memory}} (needs: " + (
        "{problem} {memory})"
    )


def test_the_file_must_be_written_for_the_mode_and_owns_the_thinking_switch(tmp_path):
    good = str(_write(tmp_path, _valid()))
    with pytest.raises(ConfigError, match="mode = 'memagent' but MEM_MODE=rememr1"):
        MemAgentConfig.from_env({"MEM_PROMPTS": good, "MEM_MODE": "rememr1"})
    with pytest.raises(ConfigError, match=r'MEM_THINKING=1 switches the built-in prompts; .* set thinking = "on"'):
        MemAgentConfig.from_env({"MEM_PROMPTS": good, "MEM_THINKING": "1"})


def test_the_commands_exit_2_with_the_error_in_one_line(tmp_path, capsys, monkeypatch):
    bad = _write(tmp_path, _valid(templates={"memory_turn": "{problem} {memory}"}))
    document = _write(tmp_path, "Some text.", "doc.txt")
    argv = ["--question", "Q?", "--document", str(document), "--url", "http://127.0.0.1:9", "--prompts", str(bad)]
    assert run_document.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: --prompts {bad}: templates.memory_turn: missing placeholder {{section}} " + (
        "(needs: {problem} {memory} {section})\n"
    ), "the file came from the flag: the message names the flag"
    monkeypatch.setenv("MEM_PROMPTS", str(bad))
    data = _write(tmp_path, '[{"input": "q", "answers": ["a"], "context": "c"}]', "eval_1.json")
    assert eval_ruler_hqa.main(["--data", str(data), "--url", "http://127.0.0.1:9", "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: MEM_PROMPTS={bad}: templates.memory_turn") and err.count("\n") == 1


def test_a_file_given_by_flag_is_named_by_the_flag_in_every_message(tmp_path, capsys, monkeypatch):
    good = _write(tmp_path, _valid())
    monkeypatch.setenv("MEM_PROMPTS", str(tmp_path / "unused.toml"))  # the flag wins: never read
    monkeypatch.setenv("MEM_THINKING", "1")
    argv = ["--question", "Q?", "--url", "http://127.0.0.1:9", "--prompts", str(good)]
    assert run_document.main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: MEM_THINKING=1 switches the built-in prompts; with --prompts {good} set "
        'thinking = "on" in the file instead\n'
    )


def test_the_hooks_raise_it_at_their_first_call(tmp_path, monkeypatch, fresh_settings):
    monkeypatch.setenv("MEM_PROMPTS", str(tmp_path / "missing.toml"))
    args = host_args("http://127.0.0.1:9", hf_checkpoint="bundled:qwen3", n_samples_per_prompt=1)
    sample = Sample(index=0, prompt="Q?", label="a", metadata={"context": "text"})
    with pytest.raises(ConfigError, match=r"MEM_PROMPTS=.*missing\.toml: cannot read"):
        asyncio.run(rollout.generate(args, sample, sampling_params(args)))


def test_the_docs_example_file_is_a_valid_template_file(tmp_path):
    page = (Path(__file__).resolve().parents[1] / "docs" / "prompt-templates.md").read_text()
    section = page[page.index("## The file format") :]
    start = section.index("```toml\n") + len("```toml\n")
    example = section[start : section.index("\n```", start)]
    file = load_prompt_file(_write(tmp_path, example), "memagent")
    assert file.final_turn.format(problem="Q", memory="M").endswith("Answer inside \\boxed{}.")
    assert file.memory_turn.startswith("Question: {problem}")
