"""With a template file, every request is token for token what the authors' client sends.

The authors' clients are re-implemented in support/authors_clients.py from reading their code; the
template files come from fetch_prompts run against stand-ins with our own wording. The model is a
script of responses chosen to reach every rule: EOS and pad ids, an empty memory, `</think>` in a
memory and in the answer, multi-byte characters, a document whose chunks split a character and
hold the pad token's text. The server side of the text assembly is checked against vLLM itself in
test_prompt_templates_server.py.
"""

from __future__ import annotations

import asyncio
import json
import shutil

import numpy as np
import pytest

from mem_agent.agent.prompt_sets import builtin_prompts, prompt_facts
from mem_agent.agent.records import Completion, FinishReason, SamplingParams
from mem_agent.agent.rememr1 import ReMemR1Planner
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.settings.config import AgentMode, MemAgentConfig
from mem_agent.templates.template_file import Thinking
from mem_agent.tokenization.tokenizer import bundled_qwen3_dir, decode, encode, load_tokenizer
from support import authors_files
from support.authors_clients import REMEMR1_SLOT, EvaluationClient, TrainingClient, extract_solution
from support.authors_files import loopback_mirror

CHUNK = 40
QUESTION = "  Which river runs past the glassworks founded by Ada Velmont?\n"
THINKING = {"template": None, "on": True, "off": False}


@pytest.fixture(scope="module")
def fetched(tmp_path_factory) -> dict[str, str]:
    """Template files for every source and thinking switch, from the loopback stand-ins."""
    root = tmp_path_factory.mktemp("templates")
    files = {}
    with loopback_mirror(root / "mirror") as mirror:
        for source in ("memagent", "memagent-eval", "rememr1", "rememr1-eval"):
            for thinking in THINKING:
                out = root / f"{source}-{thinking}.toml"
                assert mirror.fetch(source, out, "--thinking", thinking) == 0
                files[f"{source}-{thinking}"] = str(out)
    return files


@pytest.fixture(scope="module")
def document(synthetic_rows) -> str:
    """Our synthetic paragraphs with multi-byte text and the pad token's literal text mixed in."""
    row = synthetic_rows[0]
    paragraphs = ["".join(sentences) for sentences in row["context"]["sentences"]]
    # 30 feathers are 90 byte-level tokens: of any two chunk boundaries inside them, one splits a character.
    extra = "Ärger über Öl — café, naïve; 河流穿过玻璃厂。" + "🪶" * 30 + " Dès l'aube <|endoftext|> the log resumed."
    return "\n  " + "\n\n".join([extra, *paragraphs, extra]) + "\n\n"


def _scripted_responses(tokenizer) -> list[list[int]]:
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    memory_turns = [
        [*encode(tokenizer, "<think>\nweighing it\n</think>\n\n  Log: Ada → Corvane, café.  ").tolist(), eos],
        [*encode(tokenizer, "Log: glass").tolist(), pad, *encode(tokenizer, " near 河流").tolist(), eos],
        [eos],
        encode(tokenizer, "Log: unchanged, no closing tag").tolist(),
    ]
    final = [*encode(tokenizer, "<think>maybe \\boxed{Tanash}</think>\n The river is \\boxed{Vell}.").tolist(), eos]
    return memory_turns * 25 + [final]


class Scripted:
    """A model that answers with the script, recording every prompt it was sent."""

    def __init__(self, responses: list[list[int]], final: list[int]) -> None:
        self.responses, self.final, self.prompts = responses, final, []

    async def __call__(self, prompt_ids, max_tokens, sampling, *, priority=0):
        self.prompts.append(prompt_ids.tolist())
        ids = self.final if priority == 1 else self.responses[len(self.prompts) - 1]
        return Completion.build(ids, [-0.5] * len(ids), FinishReason.STOP)


def _run(tokenizer, config: MemAgentConfig, context: str):
    script = _scripted_responses(tokenizer)
    model = Scripted(script[:-1], script[-1])
    trajectory = asyncio.run(MemoryAgent(tokenizer, config).run(QUESTION, context, model, SamplingParams()))
    return trajectory, model.prompts, script


def _training_client(tokenizer, thinking: str, **kw) -> TrainingClient:
    return TrainingClient(
        tokenizer,
        authors_files.MEMORY_TRAIN,
        authors_files.FINAL_TRAIN,
        authors_files.NO_MEMORY,
        thinking=THINKING[thinking],
        **kw,
    )


def _evaluation_client(tokenizer, thinking: str) -> EvaluationClient:
    templates = (authors_files.MEMORY_EVAL, authors_files.FINAL_EVAL, authors_files.NO_MEMORY)
    return EvaluationClient(tokenizer, *templates, thinking=THINKING[thinking])


@pytest.mark.parametrize("thinking", list(THINKING))
@pytest.mark.parametrize("max_chunks", [6, 1000], ids=["centre-cut", "whole"])
def test_token_assembly_is_the_training_clients_requests(tokenizer, fetched, document, thinking, max_chunks):
    config = MemAgentConfig(prompts=fetched[f"memagent-{thinking}"], chunk_tokens=CHUNK, max_chunks=max_chunks)
    trajectory, sent, script = _run(tokenizer, config, document)
    client = _training_client(tokenizer, thinking)
    expected = client.requests(QUESTION, document, CHUNK, max_chunks, script[:-1])
    assert sent == expected
    ids, cap = encode(tokenizer, document).tolist(), max_chunks * CHUNK
    kept = ids[: cap // 2] + ids[-(cap // 2) :] if len(ids) > cap else ids
    assert kept.count(tokenizer.pad_token_id) == 2, "both halves keep a pad id for the client to drop"
    assert trajectory.answer == decode(tokenizer, client.memory_of(script[-1]))
    assert (trajectory.dropped_tokens > 0) == (max_chunks == 6) and len(expected) - 1 == trajectory.num_chunks


@pytest.mark.parametrize("thinking", list(THINKING))
def test_text_assembly_is_the_evaluation_clients_requests(tokenizer, fetched, document, thinking):
    config = MemAgentConfig(
        prompts=fetched[f"memagent-eval-{thinking}"], chunk_tokens=CHUNK, max_chunks=0
    )  # evaluation: uncut
    trajectory, sent, script = _run(tokenizer, config, document)
    client = _evaluation_client(tokenizer, thinking)
    assert any("\ufffd" in chunk for chunk in client.chunk_texts(document, CHUNK)), "a chunk must split a character"
    assert sent == client.requests(QUESTION, document, CHUNK, script[:-1])
    response = decode(tokenizer, script[-1]).strip()
    assert trajectory.answer == extract_solution(response) == "The river is \\boxed{Vell}."
    memories = [decode(tokenizer, turn.memory_ids) for turn in trajectory.turns[:2]]
    assert memories == ["Log: Ada → Corvane, café.", "Log: glass near 河流"]


def test_the_thinking_switch_reaches_every_request(tokenizer, fetched, document):
    """Qwen3's template thinks by default: `template` and `on` send the same ids; `off` pre-fills an
    empty think block in every request."""
    prompts = {}
    for thinking in THINKING:
        config = MemAgentConfig(prompts=fetched[f"memagent-eval-{thinking}"], chunk_tokens=CHUNK, max_chunks=0)
        prompts[thinking] = _run(tokenizer, config, document)[1]
    assert prompts["template"] == prompts["on"] != prompts["off"]
    assert all(decode(tokenizer, p).endswith("<think>\n\n</think>\n\n") for p in prompts["off"])


def _tokenizer_with_system_prompt(folder, system: str):
    """The bundled tokenizer with a chat template of our own that adds a default system prompt and
    trims the user's message (as some model families do), to show what each client sees."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(bundled_qwen3_dir() / name, folder / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = (
        "{%- if messages[0]['role'] != 'system' %}<|im_start|>system\n" + system + "<|im_end|>\n"
        "{%- endif %}{%- for m in messages %}\n<|im_start|>{{ m['role'] }}\n{{ m['content'] | trim }}<|im_end|>"
        "{%- endfor %}\n{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return load_tokenizer(folder)


def test_a_default_system_prompt_is_sent_by_both_and_only_the_server_trims_the_message(tmp_path, fetched, document):
    tokenizer = _tokenizer_with_system_prompt(tmp_path, "Read carefully; reply plainly.")
    config = MemAgentConfig(prompts=fetched["memagent-template"], chunk_tokens=CHUNK, max_chunks=1000)
    sent = _run(tokenizer, config, document)[1]
    script = _scripted_responses(tokenizer)[:-1]
    assert sent == _training_client(tokenizer, "template").requests(QUESTION, document, CHUNK, 1000, script)
    config = MemAgentConfig(prompts=fetched["memagent-eval-template"], chunk_tokens=CHUNK, max_chunks=0)
    sent_text = _run(tokenizer, config, document)[1]
    assert sent_text == _evaluation_client(tokenizer, "template").requests(QUESTION, document, CHUNK, script)
    for prompt in (sent[0], sent_text[0]):
        assert tokenizer.decode(prompt).startswith("<|im_start|>system\nRead carefully; reply plainly.<|im_end|>")
    assert "Revised log:\n<|im_end|>" in tokenizer.decode(sent[0])  # the message was never shown to the template
    assert "Revised log:<|im_end|>" in tokenizer.decode(sent_text[0])  # the server renders (and trims) it


def test_braces_in_the_chat_template_stay_text_where_the_training_client_fails(tmp_path, fetched, document):
    """MemAgent's training client runs str.format over the rendered chat template; a default system
    prompt with braces breaks it. Ours renders around markers and keeps the braces (docs/fidelity.md)."""
    tokenizer = _tokenizer_with_system_prompt(tmp_path, "Answer in {style}.")
    config = MemAgentConfig(prompts=fetched["memagent-template"], chunk_tokens=CHUNK, max_chunks=1000)
    sent = _run(tokenizer, config, document)[1]
    assert all(tokenizer.decode(prompt).startswith("<|im_start|>system\nAnswer in {style}.") for prompt in sent)
    with pytest.raises(KeyError, match="style"):
        _training_client(tokenizer, "template").format(authors_files.FINAL_TRAIN, prompt=[], memory=[])


@pytest.mark.parametrize("source", ["rememr1", "rememr1-eval"])
def test_rememr1_prompts_show_the_recalled_memory_as_the_authors_do(tokenizer, fetched, source):
    """Given the same memory and recalled texts (what becomes them is our ReMemR1 rule, see
    docs/rememr1.md), every prompt is the authors' rendering of their template, recall block included."""
    config = MemAgentConfig(mode="rememr1", prompts=fetched[f"{source}-template"], retriever="recall")
    agent = MemoryAgent(tokenizer, config)
    prompts, planner = agent.prompts, agent.new_planner(QUESTION)
    assert isinstance(planner, ReMemR1Planner)
    if source == "rememr1":
        client = TrainingClient(
            tokenizer, authors_files.MEMORY_TRAIN_R1, authors_files.FINAL_TRAIN_R1, "", slot_pattern=REMEMR1_SLOT
        )

        def reference(template: str, chunk: np.ndarray | None = None, **texts: str) -> list[int]:
            ids = {key: encode(tokenizer, value).tolist() for key, value in texts.items()}
            return client.format(template, **ids, **({} if chunk is None else {"chunk": chunk.tolist()}))
    else:
        text_client = EvaluationClient(tokenizer, authors_files.MEMORY_EVAL_R1, authors_files.FINAL_EVAL_R1, "")

        def reference(template: str, chunk: np.ndarray | None = None, **texts: str) -> list[int]:
            chunk_text = {} if chunk is None else {"chunk": tokenizer.decode(chunk.tolist())}
            return text_client.send(template.format(**texts, **chunk_text))

    answers = [
        "<update>Ada Velmont founded Corvane.</update>",
        "<update>Corvane makes glass.</update>",
        "<update>It sits on the Vell.</update><recall>who founded Corvane</recall>",
        "<update>Nothing new.</update>",
    ]
    problem = QUESTION if source == "rememr1" else QUESTION.strip()
    memory, recalled = authors_files.NO_MEMORY, authors_files.NO_RECALL
    for step, answer in enumerate(answers):
        chunk = encode(tokenizer, f"Section {step}: the glassworks 🦜 and the river.")
        slots = {"prompt": problem, "memory": memory, "recalled_memory": recalled}
        assert planner.memory_prompt(step, chunk).tolist() == reference(MEMORY_TEMPLATES[source], chunk, **slots)
        ids = encode(tokenizer, answer)
        completion = Completion.build(ids.tolist(), [0.0] * len(ids), FinishReason.STOP)
        extras = planner.after_memory_turn(step, prompts.memory(ids), completion)
        memory, recalled = extras["memory_text"], extras["recalled"] or authors_files.NO_RECALL
        if step == 2:
            assert "Ada Velmont founded Corvane." in recalled
    slots = {"prompt": problem, "memory": memory, "recalled_memory": recalled}
    assert planner.final_prompt().tolist() == reference(FINAL_TEMPLATES[source], **slots)


MEMORY_TEMPLATES = {"rememr1": authors_files.MEMORY_TRAIN_R1, "rememr1-eval": authors_files.MEMORY_EVAL_R1}
FINAL_TEMPLATES = {"rememr1": authors_files.FINAL_TRAIN_R1, "rememr1-eval": authors_files.FINAL_EVAL_R1}


def test_without_a_file_the_built_in_prompts_run_and_say_so(tokenizer, document):
    agent = MemoryAgent(tokenizer, MemAgentConfig(chunk_tokens=CHUNK))
    assert agent.prompt_facts["kind"] == "built-in" and len(agent.prompt_facts["sha256"]) == 64
    builtin = builtin_prompts(tokenizer, AgentMode.MEMAGENT)
    _, sent, _ = _run(tokenizer, MemAgentConfig(chunk_tokens=CHUNK), document)
    assert np.array_equal(
        sent[0],
        builtin.memory_prompt(
            problem=encode(tokenizer, QUESTION), memory=builtin.no_memory, section=encode(tokenizer, document)[:CHUNK]
        ),
    )
    assert "Scan the excerpt" not in decode(tokenizer, sent[0])


def test_a_template_file_is_recorded_with_its_source(tokenizer, fetched):
    config = MemAgentConfig(prompts=fetched["memagent-eval-off"])
    facts = MemoryAgent(tokenizer, config).prompt_facts
    assert facts == prompt_facts(config), "the same facts with or without a tokenizer"
    assert facts["kind"] == "file" and facts["assembly"] == "text" and facts["thinking"] == Thinking.OFF.value
    assert facts["source"]["name"] == "memagent-eval" and len(facts["sha256"]) == 64
