"""Template files against the real vLLM server: what it renders, and every prompt the evaluator and
the training hook send, recorded by a proxy and compared with the authors' clients token for token.

The text assembly claims to send the ids vLLM would make of /v1/chat/completions; the server's own
/tokenize renders a `messages` request exactly as chat completions does, so it is the judge here.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from mem_agent import eval_ruler_hqa, rollout, run_document
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.host.clients import close_clients
from mem_agent.settings.config import MemAgentConfig
from mem_agent.templates.template_file import load_prompt_file
from mem_agent.tokenization.tokenizer import decode, encode, load_tokenizer
from support import authors_files
from support.authors_clients import EvaluationClient, TrainingClient
from support.authors_files import loopback_mirror
from support.fault_proxy import fault_proxy, scripted
from support.host.args import host_args
from support.host.rollout_loop import sampling_params
from support.host.sample import Sample
from support.http import post_json

pytestmark = pytest.mark.server

CHUNK = 64
NO_CAP = 1000  # chunks: MemAgent's training client always caps; this cap never binds here


@pytest.fixture(scope="module")
def fetched(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("templates")
    files = {}
    with loopback_mirror(root / "mirror") as mirror:
        for source, thinking in (("memagent", "template"), ("memagent-eval", "template"), ("memagent-eval", "off")):
            out = root / f"{source}-{thinking}.toml"
            assert mirror.fetch(source, out, "--thinking", thinking) == 0
            files[f"{source}-{thinking}"] = str(out)
    return files


@pytest.fixture(scope="module")
def items(synthetic_rows) -> list[dict]:
    """Two RULER-HQA-shaped items from our synthetic set, with multi-byte text in the documents."""
    rows = []
    for index, row in enumerate(synthetic_rows[:2]):
        titles, sentences = row["context"]["title"], row["context"]["sentences"]
        pairs = enumerate(zip(titles, sentences, strict=True), start=1)
        docs = [f"Document {i}:\n{title}\n{''.join(text)} — 河流🪶" for i, (title, text) in pairs]
        context = "\n\n".join(docs)
        rows.append({"index": index, "input": f" {row['question']} ", "answers": [row["answer"]], "context": context})
    return rows


def _client(tokenizer, source: str, thinking: bool | None = None):
    if source == "memagent":
        return TrainingClient(tokenizer, authors_files.MEMORY_TRAIN, authors_files.FINAL_TRAIN, authors_files.NO_MEMORY)
    templates = (authors_files.MEMORY_EVAL, authors_files.FINAL_EVAL, authors_files.NO_MEMORY)
    return EvaluationClient(tokenizer, *templates, thinking=thinking)


def _expected(client, question: str, context: str, responses: list[list[int]]) -> list[list[int]]:
    if isinstance(client, TrainingClient):
        return client.requests(question, context, CHUNK, NO_CAP, responses)
    return client.requests(question, context, CHUNK, responses)


def _turns(client, context: str) -> int:
    if isinstance(client, TrainingClient):
        return len(client.chunks(context, CHUNK, NO_CAP)) + 1
    return len(client.chunk_texts(context, CHUNK)) + 1


def _check_exchanges(tokenizer, client, exchanges, trajectories: list[tuple[str, str]], key: str) -> int:
    """Walk the recorded requests trajectory by trajectory (they ran one at a time) and compare each
    prompt with what the authors' client sends given the same earlier responses."""
    sent = [(json.loads(body)[key], json.loads(answer)["choices"][0]["token_ids"]) for body, answer in exchanges]
    position = 0
    for question, context in trajectories:
        turns = _turns(client, context)
        mine = sent[position : position + turns]
        expected = _expected(client, question, context, [response for _, response in mine[:-1]])
        assert [prompt for prompt, _ in mine] == expected
        assert all("Scan the excerpt" in decode(tokenizer, prompt) for prompt, _ in mine[:-1])
        assert "Settle the query from the log alone" in decode(tokenizer, mine[-1][0])
        position += turns
    assert position == len(sent), "every request belongs to a trajectory"
    return position


@pytest.mark.parametrize("thinking", ["template", "off"])
def test_text_prompts_are_the_ids_vllm_makes_of_a_chat_request(stack, fetched, thinking):
    tokenizer = load_tokenizer(stack.model_path)
    agent = MemoryAgent(tokenizer, MemAgentConfig(prompts=fetched[f"memagent-eval-{thinking}"]))
    file = load_prompt_file(fetched[f"memagent-eval-{thinking}"])
    chunk_ids = encode(tokenizer, " <|endoftext|> Ärger 🪶🪶")[:-1]  # ends inside the second feather
    slots = {"problem": "Who? ", "memory": "  Nothing logged yet", "section": agent.prompts.chunk(chunk_ids)}
    assert "\ufffd" in slots["section"] and "<|endoftext|>" in slots["section"]
    body = {"messages": [{"role": "user", "content": file.memory_turn.format(**slots)}], "add_generation_prompt": True}
    if thinking != "template":
        body["chat_template_kwargs"] = {"enable_thinking": thinking == "on"}
    served = post_json(f"{stack.server_url}/tokenize", body)["tokens"]
    assert agent.prompts.memory_prompt(**slots).tolist() == served


def test_the_text_a_chat_request_returns_is_the_decode_of_its_ids(stack):
    """The text client's memory is the server's message content; we decode the same ids to it."""
    tokenizer = load_tokenizer(stack.model_path)
    for number in range(6):
        request = {"messages": [{"role": "user", "content": f"Note {number}: 河流 🪶"}], "max_tokens": 48}
        answer = post_json(f"{stack.server_url}/v1/chat/completions", {**request, "return_token_ids": True})
        choice = answer["choices"][0]
        assert decode(tokenizer, choice["token_ids"]) == choice["message"]["content"]


@pytest.mark.parametrize("source", ["memagent", "memagent-eval"])
def test_the_evaluator_sends_the_authors_requests_and_records_the_templates(stack, fetched, items, tmp_path, source):
    data = tmp_path / "eval_2.json"
    data.write_text(json.dumps(items))
    path = fetched[f"{source}-template"]
    argv = ["--data", str(data), "--output-dir", str(tmp_path / "out"), "--protocol", "vllm", "--prompts", path]
    argv += ["--tokenizer", str(stack.model_path), "--chunk-tokens", str(CHUNK), "--max-memory", "24"]
    argv += ["--max-final", "16", "--questions-in-flight", "1", "--concurrency", "1", "--no-plot"]
    with fault_proxy(stack.router_url, scripted()) as proxy:
        assert eval_ruler_hqa.main([*argv, "--url", proxy.url]) == 0
        exchanges = list(proxy.exchanges)
    tokenizer = load_tokenizer(stack.model_path)
    trajectories = [(item["input"], item["context"]) for item in items]
    assert _check_exchanges(tokenizer, _client(tokenizer, source), exchanges, trajectories, "token_ids") > 4
    facts = json.loads((tmp_path / "out" / "summary.json").read_text())["run"]["prompts"]
    file = load_prompt_file(path)
    assert facts == file.facts() and facts["source"]["name"] == source and facts["sha256"] == file.sha256


@pytest.mark.parametrize("source", ["memagent", "memagent-eval"])
def test_the_training_hook_sends_the_authors_requests(stack, fetched, items, monkeypatch, fresh_settings, source):
    for name, value in {"MEM_PROMPTS": fetched[f"{source}-template"], "MEM_CHUNK_TOKENS": str(CHUNK)}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEM_MAX_MEMORY", "16")
    monkeypatch.setenv("MEM_MAX_FINAL", "16")
    monkeypatch.setenv("MEM_MAX_CHUNKS", "0")  # the whole document, as the reference clients read it
    item = items[1]
    sample = Sample(index=0, group_index=0, prompt=item["input"], label=item["answers"][0])
    sample.metadata = {"context": item["context"], "ground_truth": item["answers"]}
    with fault_proxy(stack.router_url, scripted()) as proxy:
        args = host_args(proxy.url, hf_checkpoint=str(stack.model_path), n_samples_per_prompt=1)

        async def run():
            try:
                return await rollout.generate(args, sample, sampling_params(args))
            finally:
                await close_clients()

        rows = asyncio.run(run())
        exchanges = list(proxy.exchanges)
    tokenizer = load_tokenizer(stack.model_path)
    trajectory = [(item["input"], item["context"])]
    turns = _check_exchanges(tokenizer, _client(tokenizer, source), exchanges, trajectory, "token_ids")
    assert len(rows) == turns
    for row, (body, _) in zip(rows, exchanges, strict=True):
        prompt = json.loads(body)["token_ids"]
        assert row.tokens[: len(prompt)] == prompt and len(row.tokens) == len(prompt) + row.response_length


def test_the_one_document_command_sends_the_authors_requests_and_says_which(stack, fetched, items, tmp_path):
    item = items[0]
    document = tmp_path / "doc.txt"
    document.write_text(item["context"])
    path = fetched["memagent-eval-off"]
    argv = ["--question", item["input"], "--document", str(document), "--protocol", "vllm", "--prompts", path]
    argv += ["--tokenizer", str(stack.model_path), "--chunk-tokens", str(CHUNK), "--max-memory", "16"]
    argv += ["--max-final", "16", "--json", str(tmp_path / "run.json"), "--quiet"]
    with fault_proxy(stack.router_url, scripted()) as proxy:
        assert run_document.main([*argv, "--url", proxy.url]) == 0
        exchanges = list(proxy.exchanges)
    tokenizer = load_tokenizer(stack.model_path)
    client = _client(tokenizer, "memagent-eval", thinking=False)
    assert _check_exchanges(tokenizer, client, exchanges, [(item["input"], item["context"])], "token_ids") > 2
    assert json.loads((tmp_path / "run.json").read_text())["prompts"] == load_prompt_file(path).facts()
