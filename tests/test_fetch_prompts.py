"""fetch_prompts: the authors' templates at a pinned commit, checked, parsed (never run), written as our file.

Every download here is from a loopback server that serves stand-ins we write ourselves
(support/authors_files.py): same layout as the authors' files, invented wording.
"""

from __future__ import annotations

import re

import pytest

from mem_agent import fetch_prompts
from mem_agent.templates.authors_download import DEFAULT_BASE_URL
from mem_agent.templates.sources import SOURCES
from mem_agent.templates.template_file import Assembly, MemoryText, Thinking, load_prompt_file
from support import authors_files
from support.authors_files import FAKE_COMMIT, loopback_mirror
from support.exits import exit_status


@pytest.fixture
def mirror(tmp_path):
    with loopback_mirror(tmp_path / "mirror") as served:
        yield served


def test_the_pins_are_full_commits_and_checksums_on_raw_github():
    for source in SOURCES.values():
        assert re.fullmatch(r"[0-9a-f]{40}", source.commit) and re.fullmatch(r"[0-9a-f]{64}", source.sha256)
    memagent = SOURCES["memagent"]
    assert memagent.url(DEFAULT_BASE_URL, memagent.commit) == (
        "https://raw.githubusercontent.com/BytedTsinghua-SIA/MemAgent/"
        "76b7a658988e4ea53d7388a62de6c0ce79084146/recurrent/impls/memory.py"
    )


@pytest.mark.parametrize(
    ("source", "memory_turn", "final_turn", "assembly", "memory"),
    [
        ("memagent", authors_files.MEMORY_TRAIN, authors_files.FINAL_TRAIN, Assembly.TOKENS, MemoryText.RESPONSE),
        ("memagent-eval", authors_files.MEMORY_EVAL, authors_files.FINAL_EVAL, Assembly.TEXT, MemoryText.AFTER_THINK),
        ("rememr1", authors_files.MEMORY_TRAIN_R1, authors_files.FINAL_TRAIN_R1, Assembly.TOKENS, MemoryText.RESPONSE),
        ("rememr1-eval", authors_files.MEMORY_EVAL_R1, authors_files.FINAL_EVAL_R1, Assembly.TEXT, MemoryText.RESPONSE),
    ],
)
def test_each_source_becomes_a_file_that_renders_the_authors_text(
    mirror, tmp_path, capsys, source, memory_turn, final_turn, assembly, memory
):
    """The file's templates, filled in, give exactly the text the authors' client builds: a token
    template keeps every brace that is not a {word} slot, a str.format template unescapes {{ }}."""
    out = tmp_path / f"{source}.toml"
    assert mirror.fetch(source, out) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    spec = SOURCES[source]
    file = load_prompt_file(out, spec.mode)
    values = {"problem": "<P>", "memory": "<M>", "section": "<C>", "recalled": "<R>"}
    theirs = {"prompt": "<P>", "memory": "<M>", "chunk": "<C>", "recalled_memory": "<R>"}

    def authors(template: str) -> str:
        if spec.slot_pattern is None:
            return template.format(**theirs)
        return re.sub(spec.slot_pattern, lambda match: theirs[match.group(1)], template)

    ours = {k: v for k, v in values.items() if spec.mode == "rememr1" or k != "recalled"}
    assert file.memory_turn.format(**ours) == authors(memory_turn)
    ours.pop("section")
    assert file.final_turn.format(**ours) == authors(final_turn)
    assert file.no_memory == authors_files.NO_MEMORY
    assert file.no_recall == (authors_files.NO_RECALL if spec.mode == "rememr1" else None)
    assert (file.assembly, file.memory, file.thinking) == (assembly, memory, Thinking.TEMPLATE)
    assert file.source["commit"] == FAKE_COMMIT and file.source["repository"] == spec.repository
    assert file.source["url"] == spec.url(mirror.url, FAKE_COMMIT)
    assert file.source["sha256"] == mirror.publish(source, authors_files.STAND_INS[source])


def test_training_templates_keep_literal_braces_that_the_evaluation_ones_unescape(mirror, tmp_path):
    """MemAgent's training client never runs str.format on the template: `\\boxed{{}}` reaches the model."""
    assert mirror.fetch("memagent", tmp_path / "train.toml") == 0
    assert mirror.fetch("memagent-eval", tmp_path / "eval.toml") == 0
    train = load_prompt_file(tmp_path / "train.toml").final_turn.format(problem="p", memory="m")
    evaluation = load_prompt_file(tmp_path / "eval.toml").final_turn.format(problem="p", memory="m")
    assert "\\boxed{{}} (or {} when unsure)" in train and "\\boxed{}." in evaluation


def test_the_thinking_switch_can_be_set_explicitly(mirror, tmp_path):
    assert mirror.fetch("memagent-eval", tmp_path / "p.toml", "--thinking", "off") == 0
    assert load_prompt_file(tmp_path / "p.toml").thinking is Thinking.OFF


def test_a_file_that_is_not_the_pinned_one_is_refused_and_nothing_is_written(mirror, tmp_path, capsys):
    out = tmp_path / "p.toml"
    mirror.publish("memagent", authors_files.STAND_INS["memagent"] + "# changed\n")
    argv = ["--source", "memagent", "--out", str(out), "--base-url", mirror.url, "--commit", FAKE_COMMIT]
    assert fetch_prompts.main([*argv, "--sha256", "0" * 64]) == 1
    err = capsys.readouterr().err
    assert "is not the pinned " + "0" * 64 in err and err.count("\n") == 1 and not out.exists()


def test_the_pinned_commit_and_checksum_are_the_default(mirror, tmp_path, capsys):
    """Without --commit the pinned commit is asked for; a stand-in can never match the pinned hash."""
    spec = SOURCES["memagent"]
    mirror.publish("memagent", authors_files.STAND_INS["memagent"], commit=spec.commit)
    out = tmp_path / "p.toml"
    assert fetch_prompts.main(["--source", "memagent", "--out", str(out), "--base-url", mirror.url]) == 1
    assert f"is not the pinned {spec.sha256}" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (authors_files.STAND_INS["memagent-eval"].replace("TEMPLATE_FINAL =", "FINAL ="), "assigned to TEMPLATE_FINAL"),
        (authors_files.STAND_INS["memagent-eval"].replace("{chunk}", "{passage}"), "unknown placeholder {passage}"),
        (authors_files.STAND_INS["memagent-eval"].replace("{chunk}", "{chunk!r}"), "format spec or conversion"),
        ("def broken(:\n", "not a Python file this interpreter can parse"),
    ],
)
def test_a_changed_file_is_an_error_not_a_guess(mirror, tmp_path, capsys, text, message):
    out = tmp_path / "p.toml"
    assert mirror.fetch("memagent-eval", out, text=text) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


def test_download_failures_are_one_line_errors(mirror, tmp_path, capsys):
    argv = ["--source", "rememr1", "--out", str(tmp_path / "p.toml"), "--commit", FAKE_COMMIT, "--sha256", "a" * 64]
    assert fetch_prompts.main([*argv, "--base-url", mirror.url]) == 1
    assert "HTTP 404" in capsys.readouterr().err
    assert fetch_prompts.main([*argv, "--base-url", "http://127.0.0.1:9", "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: GET http://127.0.0.1:9/syr-cn/ReMemR1/") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--source and --out are required"),
        (["--source", "memagent", "--out", "OUT", "--commit", FAKE_COMMIT], "--commit and --sha256 go together"),
        (["--source", "memagent", "--out", "OUT", "--commit", "abc", "--sha256", "a" * 64], "full 40-character"),
        (["--source", "memagent", "--out", "OUT", "--commit", FAKE_COMMIT, "--sha256", "xyz"], "64 lowercase hex"),
        (["--source", "memagent", "--out", "EXISTS"], "exists; pass --force to replace it"),
        (["--source", "memagent", "--out", "OUT", "--base-url", "ftp://x"], "must start with http:// or https://"),
        (["--source", "memagent", "--out", "OUT", "--timeout", "0"], "--timeout 0 must be a number above 0"),
        (["--source", "memagent", "--out", "FOLDER", "--force"], "FOLDER is a folder, not a regular file"),
        (["--source", "memagent", "--out", "NOWHERE/out.toml"], "NOWHERE does not exist"),
    ],
)
def test_usage_mistakes_exit_2(tmp_path, capsys, extra, message):
    (tmp_path / "EXISTS").write_text("keep me")
    (tmp_path / "FOLDER").mkdir()
    paths = ("OUT", "EXISTS", "FOLDER", "NOWHERE/out.toml")
    argv = [str(tmp_path / arg) if arg in paths else arg for arg in extra]
    assert exit_status(fetch_prompts.main, argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert (tmp_path / "EXISTS").read_text() == "keep me"


def test_every_flag_says_its_default_or_that_it_is_required():
    actions = [action for action in fetch_prompts.build_parser()._actions if action.option_strings != ["-h", "--help"]]
    for action in actions:
        assert "default" in action.help or "required unless --list" in action.help or action.dest == "list", action


def test_list_names_every_source_with_its_pin(capsys):
    assert fetch_prompts.main(["--list"]) == 0
    out = capsys.readouterr().out
    for source in SOURCES.values():
        assert f"{source.repository}@{source.commit[:12]} {source.path}" in out
