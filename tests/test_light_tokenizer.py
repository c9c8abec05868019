"""The light tokenizer gives exactly transformers' ids and texts, and never needs torch.

Every case compares `mem_agent.tokenization.light_tokenizer` with `transformers.AutoTokenizer` loaded from the
same folder: the bundled Qwen3 tokenizer (its template in tokenizer_config.json) and the tiny
model's folder (saved by transformers 5: `chat_template.jinja`, no added_tokens_decoder).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import jinja2.exceptions
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_agent.agent.prompt_sets import builtin_prompts
from mem_agent.serving.tiny_model import ensure_tiny_qwen3
from mem_agent.settings.config import AgentMode, ConfigError, MemAgentConfig, TokenizerBackend
from mem_agent.tokenization.light_tokenizer import LightTokenizer, UnsupportedTokenizerError, load
from mem_agent.tokenization.tokenizer import (
    BUNDLED_QWEN3,
    TokenizerNotFoundError,
    bundled_qwen3_dir,
    encode,
    load_tokenizer,
)

FOLDERS = ("bundled", "tiny")
SPECIAL_TEXTS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|vision_pad|>"]
PIECES = st.sampled_from(
    [
        *SPECIAL_TEXTS,
        "\n",
        "\n\n",
        " ",
        "  ",
        "\t",
        "\r\n",
        ".",
        " ,",
        "Paris",
        "東京",
        "ü",
        "é",
        "🙂",
        "'s",
        "42",
        "{{",
    ]
)
TEXTS = st.lists(PIECES | st.text(max_size=8), max_size=40).map("".join)
HYPOTHESIS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _folder(name: str) -> Path:
    return bundled_qwen3_dir() if name == "bundled" else ensure_tiny_qwen3()


@pytest.fixture(scope="module", params=FOLDERS)
def pair(request: pytest.FixtureRequest) -> tuple[LightTokenizer, object]:
    """(light, transformers) tokenizers of one folder."""
    folder = _folder(request.param)
    return load_tokenizer(folder, TokenizerBackend.LIGHT), load_tokenizer(folder, TokenizerBackend.TRANSFORMERS)


def test_the_default_loader_is_the_light_one_for_both_folders():
    for name in FOLDERS:
        assert isinstance(load_tokenizer(_folder(name)), LightTokenizer)
    assert load_tokenizer(BUNDLED_QWEN3) is load_tokenizer(BUNDLED_QWEN3), "loaded once per process"


@HYPOTHESIS
@given(text=TEXTS)
def test_encode_gives_transformers_ids_on_any_text(pair, text):
    light, hf = pair
    ids = encode(light, text).tolist()
    assert ids == encode(hf, text).tolist()
    assert ids == hf(text, add_special_tokens=False)["input_ids"]


def test_long_documents_and_special_token_strings_encode_identically(pair, synthetic_rows):
    light, hf = pair
    document = "\n\n".join(
        f"Document {i}:\n{title}\n{''.join(sentences)}"
        for i, row in enumerate(synthetic_rows)
        for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
    )
    assert len(document) > 100_000
    assert encode(light, document).tolist() == hf(document, add_special_tokens=False)["input_ids"]
    specials = "".join(f"{token} x{token}\n" for token in SPECIAL_TEXTS)
    ids = encode(light, specials).tolist()
    assert ids == hf(specials, add_special_tokens=False)["input_ids"]
    assert light.convert_tokens_to_ids("<|im_end|>") in ids, "a special token's text is that token"


@HYPOTHESIS
@given(ids=st.lists(st.integers(0, 151668), max_size=30), skip=st.booleans())
def test_decode_gives_transformers_text_for_any_ids(pair, ids, skip):
    light, hf = pair
    assert light.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip)


@HYPOTHESIS
@given(ids=st.lists(st.integers(0, 151668), max_size=30), skip=st.booleans())
def test_ids_become_the_token_pieces_transformers_gives(pair, ids, skip):
    """ReMemR1's TF-IDF retriever scores the tokenizer's pieces, so they must be transformers' own."""
    light, hf = pair
    assert light.convert_ids_to_tokens(ids, skip_special_tokens=skip) == hf.convert_ids_to_tokens(
        ids, skip_special_tokens=skip
    )
    if ids:
        assert light.convert_ids_to_tokens(ids[0]) == hf.convert_ids_to_tokens(ids[0])


def test_decode_of_ids_that_split_a_character_matches_transformers(pair):
    light, hf = pair
    ids = encode(light, "a𓀀東京🫠ü<|im_end|>é").tolist()  # 𓀀 and 🫠 are three tokens each
    cuts = [ids[start:end] for start in range(len(ids)) for end in range(start, len(ids) + 1)]
    for part in cuts:
        for skip in (False, True):
            assert light.decode(part, skip_special_tokens=skip) == hf.decode(part, skip_special_tokens=skip)
    assert "\ufffd" in light.decode(ids[1:2]), "half a character decodes to the replacement mark, as in transformers"
    as_array = np.asarray(ids, dtype=np.int32)
    assert light.decode(as_array) == hf.decode(ids) and light.decode(ids[0]) == hf.decode(ids[0])
    assert light.decode([ids, ids[:2]]) == hf.decode([ids, ids[:2]])


def test_special_tokens_and_their_ids_are_transformers(pair):
    light, hf = pair
    assert light.all_special_ids == hf.all_special_ids
    assert light.all_special_tokens == hf.all_special_tokens
    assert light.special_tokens_map == hf.special_tokens_map
    for name in ("eos_token_id", "pad_token_id", "unk_token_id", "bos_token_id", "eos_token", "pad_token"):
        assert getattr(light, name) == getattr(hf, name), name
    assert light.eos_token_id == 151645 and light.unk_token_id is None
    tokens = ["<|im_end|>", "<think>", "</think>", "not-a-token"]
    assert light.convert_tokens_to_ids(tokens) == hf.convert_tokens_to_ids(tokens) == [151645, 151667, 151668, None]
    assert len(light) == len(hf) == 151669 and light.vocab_size == hf.vocab_size


ROLES = st.sampled_from(["user", "assistant", "system", "tool"])
MESSAGES = st.lists(st.fixed_dictionaries({"role": ROLES, "content": TEXTS}), min_size=1, max_size=5)


@HYPOTHESIS
@given(messages=MESSAGES, thinking=st.sampled_from([True, False, None]), generation=st.booleans())
def test_chat_templates_render_and_tokenise_as_in_transformers(pair, messages, thinking, generation):
    light, hf = pair
    extra = {} if thinking is None else {"enable_thinking": thinking}
    text = light.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation, **extra)
    assert text == hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation, **extra)
    ids = light.apply_chat_template(messages, add_generation_prompt=generation, **extra)["input_ids"]
    assert ids == hf.apply_chat_template(messages, add_generation_prompt=generation, **extra)["input_ids"]


def test_tools_tool_calls_and_reasoning_render_as_in_transformers(pair):
    """tojson keeps non-ASCII and HTML characters; tool calls and reasoning take their own branches."""
    light, hf = pair
    tools = [{"type": "function", "function": {"name": "look_up", "description": "find <b> & 東京", "parameters": {}}}]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should look it up.",
            "tool_calls": [{"function": {"name": "look_up", "arguments": {"city": "東京", "q": "<a&b>"}}}],
        },
        {"role": "tool", "content": "found"},
        {"role": "tool", "content": "also"},
        {"role": "assistant", "content": "<think>\nchecked\n</think>\n\nTokyo."},
        {"role": "user", "content": "Sure?"},
    ]
    for thinking in (True, False):
        kwargs = {"tools": tools, "add_generation_prompt": True, "enable_thinking": thinking}
        text = light.apply_chat_template(messages, tokenize=False, **kwargs)
        assert text == hf.apply_chat_template(messages, tokenize=False, **kwargs)
        assert '"東京"' in text and "<a&b>" in text
    batch = [messages[:2], messages[:3]]
    assert light.apply_chat_template(batch, tokenize=False) == hf.apply_chat_template(batch, tokenize=False)
    assert light.apply_chat_template(batch, return_dict=False) == hf.apply_chat_template(batch, return_dict=False)


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("thinking", [False, True])
def test_prompt_templates_are_the_same_ids_with_either_loader(folder, thinking):
    """The hooks, the evaluator and run_document build their prompts from these: same ids either way."""
    light = load_tokenizer(_folder(folder), TokenizerBackend.LIGHT)
    hf = load_tokenizer(_folder(folder), TokenizerBackend.TRANSFORMERS)
    for mode in AgentMode:
        ours, theirs = builtin_prompts(light, mode, thinking), builtin_prompts(hf, mode, thinking)
        for name in ("memory_turn", "final_turn"):
            mine, reference = getattr(ours, name), getattr(theirs, name)
            assert mine.slots == reference.slots
            assert [piece.tolist() for piece in mine.pieces] == [piece.tolist() for piece in reference.pieces]
        assert ours.no_memory.tolist() == theirs.no_memory.tolist()


def test_the_training_hooks_use_the_light_tokenizer_with_transformers_prompts(fresh_settings):
    from mem_agent.host import hook_config

    folder = ensure_tiny_qwen3()
    agent = hook_config.agent_for(str(folder), hook_config.settings())
    assert isinstance(agent.tokenizer, LightTokenizer)
    hf = load_tokenizer(folder, TokenizerBackend.TRANSFORMERS)
    reference = builtin_prompts(hf, AgentMode.MEMAGENT)
    for name in ("memory_turn", "final_turn"):
        ours, theirs = getattr(agent.prompts, name).pieces, getattr(reference, name).pieces
        assert [piece.tolist() for piece in ours] == [piece.tolist() for piece in theirs]
    assert agent.prompts.cleaner._special_ids == frozenset(hf.all_special_ids)


# --- folders of our own making: template features, template files, folders we do not read ---------------------


def _variant(tmp_path: Path, config: dict | None = None, files: dict[str, str] | None = None, drop=()) -> Path:
    """A copy of the bundled folder (tokenizer.json linked) with its config changed and files added."""
    source = bundled_qwen3_dir()
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        (folder / name).symlink_to(source / name)
    settings_ = {**json.loads((source / "tokenizer_config.json").read_text()), **(config or {})}
    for key in drop:
        settings_.pop(key)
    (folder / "tokenizer_config.json").write_text(json.dumps(settings_))
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _both(folder: Path) -> tuple[LightTokenizer, object]:
    return load_tokenizer(folder, TokenizerBackend.LIGHT), load_tokenizer(folder, TokenizerBackend.TRANSFORMERS)


FEATURES_TEMPLATE = """{{ bos_token }}{% for message in messages %}
  {% if loop.index0 > 3 %}{% break %}{% endif %}
  {% if message.role == 'system' %}{% continue %}{% endif %}
  {% if message.role == 'oops' %}{{ raise_exception('no role called ' + message.role) }}{% endif %}
{% generation %}[{{ message.role }}] {{ message.content | tojson }} {{ message.meta | tojson(indent=2) }}
{% endgeneration %}
{% endfor %}{{ strftime_now('%Y') }}|{{ eos_token }}|{{ flavour | default('none') }}|{{ tools | tojson }}
{% if add_generation_prompt %}<go>{% endif %}"""


def test_template_features_render_as_in_transformers(tmp_path):
    """Loop controls, trim/lstrip of blocks, generation blocks, tojson, strftime_now, special-token variables."""
    light, hf = _both(_variant(tmp_path, {"bos_token": "<|endoftext|>"}, {"chat_template.jinja": FEATURES_TEMPLATE}))
    messages = [{"role": r, "content": f"é <{r}> & 'x'", "meta": {"k": ["東京", 1]}} for r in ("system", "user", "a")]
    messages += [{"role": "user", "content": "late", "meta": None}] * 3
    for kwargs in ({}, {"flavour": "mint", "add_generation_prompt": True}, {"eos_token": "overridden"}):
        text = light.apply_chat_template(messages, tokenize=False, **kwargs)
        assert text == hf.apply_chat_template(messages, tokenize=False, **kwargs)
    assert "late" in text and text.count('[user] "late"') == 1, "break stops after the fourth message"
    assert "[system]" not in text and "|overridden|" in text and text.startswith("<|endoftext|>")
    for tokenizer in (light, hf):
        with pytest.raises(jinja2.exceptions.TemplateError, match="no role called oops"):
            tokenizer.apply_chat_template([{"role": "oops", "content": ""}], tokenize=False)


def test_template_files_win_over_the_config_and_named_templates_are_chosen_as_in_transformers(tmp_path):
    files = {"chat_template.jinja": "default:{{ messages[0].content }}", "additional_chat_templates/short.jinja": "S"}
    light, hf = _both(_variant(tmp_path, files=files))
    chat = [{"role": "user", "content": "hi"}]
    for tokenizer in (light, hf):
        assert tokenizer.apply_chat_template(chat, tokenize=False) == "default:hi"
        assert tokenizer.apply_chat_template(chat, tokenize=False, chat_template="short") == "S"
        assert tokenizer.apply_chat_template(chat, tokenize=False, chat_template="inline {{ 1 + 1 }}") == "inline 2"


def test_a_folder_with_several_templates_and_no_default_is_a_clear_error(tmp_path):
    templates = [{"name": "a", "template": "A"}, {"name": "b", "template": "B"}]
    light = load_tokenizer(_variant(tmp_path, {"chat_template": templates}), TokenizerBackend.LIGHT)
    assert light.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False, chat_template="b") == "B"
    with pytest.raises(ValueError, match="several chat templates"):
        light.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)


@pytest.mark.parametrize(
    ("clean_up", "forced", "cleaned"), [(False, False, False), (True, False, False), (True, True, True)]
)
def test_decode_cleans_up_spaces_only_where_transformers_does(tmp_path, clean_up, forced, cleaned):
    """transformers ignores clean_up_tokenization_spaces for BPE tokenizers unless forced."""
    config = {"clean_up_tokenization_spaces": clean_up}
    if forced:
        config["clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"] = True
    light, hf = _both(_variant(tmp_path, config))
    ids = encode(light, "Yes , it 's done . Is n't it ?").tolist()
    assert light.decode(ids) == hf.decode(ids)
    assert (light.decode(ids) == "Yes, it's done. Isn't it?") is cleaned
    assert light.decode(ids, clean_up_tokenization_spaces=False) == hf.decode(ids, clean_up_tokenization_spaces=False)


def test_split_special_tokens_is_honoured_as_in_transformers(tmp_path):
    light, hf = _both(_variant(tmp_path, {"split_special_tokens": True}))
    text = "a<|im_end|>b"
    assert encode(light, text).tolist() == encode(hf, text).tolist()
    assert light.convert_tokens_to_ids("<|im_end|>") not in encode(light, text).tolist()


def _flip_special(config: dict) -> dict:
    listed = json.loads(json.dumps(config["added_tokens_decoder"]))
    listed["151667"]["special"] = True
    return {"added_tokens_decoder": listed}


UNSUPPORTED = {
    "class": ({"tokenizer_class": "LlamaTokenizerFast"}, (), {}, "tokenizer class 'LlamaTokenizerFast'"),
    "code": ({"auto_map": {"AutoTokenizer": ["x.Y", None]}}, (), {}, "own code"),
    "default": ({}, ("unk_token",), {}, "leaves unk_token to the class default"),
    "prefix": ({"add_prefix_space": True}, (), {}, "pre-tokeniser is not Qwen2's"),
    "model": ({}, (), {"config.json": json.dumps({"model_type": "llama"})}, "model type 'llama'"),
    "added": (None, (), {}, "added tokens of tokenizer_config.json and tokenizer.json differ"),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_a_folder_whose_ids_could_differ_is_refused_with_the_reason(tmp_path, case):
    config, drop, files, reason = UNSUPPORTED[case]
    if config is None:
        config = _flip_special(json.loads((bundled_qwen3_dir() / "tokenizer_config.json").read_text()))
    folder = _variant(tmp_path, config, files, drop)
    with pytest.raises(UnsupportedTokenizerError, match=reason):
        load(folder)
    with pytest.raises(TokenizerNotFoundError, match=f"MEM_TOKENIZER=light cannot read .*{reason}"):
        load_tokenizer(folder, TokenizerBackend.LIGHT)


def test_auto_loads_such_a_folder_through_transformers_and_says_why(tmp_path, caplog):
    """Without unk_token in its config, Qwen2's class default applies: only transformers knows it."""
    folder = _variant(tmp_path, drop=("unk_token",))
    with caplog.at_level(logging.WARNING, logger="mem_agent.tokenization.tokenizer"):
        tokenizer = load_tokenizer(folder)
    assert not isinstance(tokenizer, LightTokenizer)
    assert tokenizer.unk_token_id == 151643
    assert "through transformers" in caplog.text and "unk_token" in caplog.text


def test_an_unreadable_tokenizer_file_is_a_one_line_error_of_the_command(tmp_path, capsys):
    from mem_agent import run_document

    folder = _variant(tmp_path)
    (folder / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TokenizerNotFoundError, match=r"cannot read .*tokenizer_config\.json"):
        load_tokenizer(folder)
    argv = ["--url", "http://127.0.0.1:9", "--tokenizer", str(folder), "--question", "q?", "--document", "-"]
    assert run_document.main(argv) == 2
    assert "cannot read" in capsys.readouterr().err


def test_mem_tokenizer_selects_the_loader_of_the_hooks_and_the_commands(tmp_path, monkeypatch, fresh_settings):
    """MEM_TOKENIZER is read once, with the other settings, and passed to the loader from there."""
    from mem_agent import rollout
    from mem_agent.host import hook_config
    from mem_agent.inference.agent_flags import build_agent

    folder = _variant(tmp_path)
    monkeypatch.setenv("MEM_TOKENIZER", "transformers")
    assert not isinstance(hook_config.agent_for(str(folder), hook_config.settings()).tokenizer, LightTokenizer)
    assert not isinstance(build_agent(str(folder), MemAgentConfig.from_env()).tokenizer, LightTokenizer)
    monkeypatch.setenv("MEM_TOKENIZER", "light")
    rollout.reset_caches()
    assert isinstance(hook_config.agent_for(str(folder), hook_config.settings()).tokenizer, LightTokenizer)
    assert isinstance(build_agent(str(folder), MemAgentConfig.from_env()).tokenizer, LightTokenizer)


def test_a_bad_mem_tokenizer_is_a_one_line_error_of_the_command(tmp_path, monkeypatch, capsys):
    from mem_agent import run_document

    monkeypatch.setenv("MEM_TOKENIZER", "fastest")
    with pytest.raises(ConfigError, match="MEM_TOKENIZER=fastest must be one of auto, light, transformers"):
        MemAgentConfig.from_env()
    argv = ["--url", "http://127.0.0.1:9", "--tokenizer", str(_variant(tmp_path)), "--question", "q?"]
    assert run_document.main(argv) == 2
    assert capsys.readouterr().err == (
        "error: MEM_TOKENIZER=fastest must be one of auto, light, transformers (default auto)\n"
    )


BROKEN_TEMPLATES = {
    "missing": ({}, ("chat_template",), "has no chat template"),
    "syntax error": ({"chat_template": "{% if messages %}never closed"}, (), "Unexpected end of template"),
    "drops the message": (
        {"chat_template": "{% for m in messages %}[{{ m.role }}]{% endfor %}<|im_start|>assistant\n"},
        (),
        "dropped prompt slots",
    ),
    "raises": ({"chat_template": "{{ raise_exception('this model takes no user turns') }}"}, (), "no user turns"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_TEMPLATES))
@pytest.mark.parametrize("command", ["run_document", "eval_ruler_hqa"])
def test_a_chat_template_that_cannot_build_the_prompts_is_a_one_line_error(tmp_path, capsys, case, command):
    """A folder without a chat template, or with one that fails or drops the message, is a user's
    mistake: exit 2 and one line naming the folder, never a traceback."""
    from mem_agent import eval_ruler_hqa, run_document

    config, drop, reason = BROKEN_TEMPLATES[case]
    folder = _variant(tmp_path, config, drop=drop)
    argv = ["--url", "http://127.0.0.1:9", "--tokenizer", str(folder)]
    if command == "run_document":
        code = run_document.main([*argv, "--question", "q?", "--document", "-"])
    else:
        data = tmp_path / "eval_1.json"
        data.write_text(json.dumps([{"input": "q?", "answers": ["a"], "context": "Some text."}]))
        code = eval_ruler_hqa.main([*argv, "--data", str(data), "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: --tokenizer {folder}: its chat template cannot build the prompts: ")
    assert re.search(reason, err)


@pytest.mark.parametrize("command", ["run_document", "eval_ruler_hqa"])
def test_the_server_address_is_checked_before_the_tokenizer_is_loaded(tmp_path, capsys, command):
    from mem_agent import eval_ruler_hqa, run_document

    argv = ["--url", "ftp://127.0.0.1:9", "--tokenizer", str(tmp_path / "no-model-here")]
    if command == "run_document":
        code = run_document.main([*argv, "--question", "q?", "--document", "-"])
    else:
        code = eval_ruler_hqa.main([*argv, "--data", str(tmp_path / "eval_1.json")])
    assert code == 2
    assert capsys.readouterr().err == "error: --url ftp://127.0.0.1:9 must start with http:// or https://\n"


def test_arguments_we_do_not_implement_are_errors_not_template_variables(pair):
    light, _ = pair
    chat = [{"role": "user", "content": "x"}]
    with pytest.raises(TypeError, match=r"continue_final_message=.*MEM_TOKENIZER=transformers"):
        light.apply_chat_template(chat, tokenize=False, continue_final_message=True)
    with pytest.raises(TypeError, match="JSON schemas"):
        light.apply_chat_template(chat, tokenize=False, tools=[len])
    with pytest.raises(ValueError, match="empty conversation"):
        light.apply_chat_template([], tokenize=False)
    assert light.apply_chat_template(chat, tokenize=False, padding=False) == light.apply_chat_template(
        chat, tokenize=False
    )


def test_the_evaluator_and_run_document_never_import_torch_or_transformers(tmp_path):
    """Start-up is the tokenizer and the imports: a whole run_document run must not touch torch."""
    from bench.bench_startup import DOCUMENT, InstantServer

    document = tmp_path / "document.txt"
    document.write_text(DOCUMENT)
    with InstantServer() as server:
        argv = [sys.executable, "-X", "importtime", "-m", "mem_agent.run_document", "--url", server.url]
        argv += ["--tokenizer", BUNDLED_QWEN3, "--question", "Who?", "--document", str(document), "--quiet"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(server.arrivals) == 2, "one memory turn and the final turn"
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "mem_agent.tokenization.light_tokenizer" in imported and "tokenizers" in imported
    heavy = {name for name in imported if name.split(".")[0] in {"torch", "transformers", "matplotlib"}}
    assert not heavy
    probe = "import json, sys, mem_agent.eval_ruler_hqa, mem_agent.run_document; print(json.dumps(sorted(sys.modules)))"
    modules = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    assert not {name for name in modules if name.split(".")[0] in {"torch", "transformers", "matplotlib"}}
