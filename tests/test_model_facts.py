"""summary.json names the model a run evaluated (name, folder, fingerprint), and compare says "unknown"
for a run that did not record it instead of counting it as a model every run shares."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mem_agent import compare, eval_ruler_hqa
from mem_agent.evaluation.model_facts import model_facts, model_fingerprint
from mem_agent.inference.client import ClientSettings
from mem_agent.inference.served_models import served_model_name
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, bundled_qwen3_dir
from support.scripted_engine import scripted_engine
from support.trajectory_runs import evaluation_run

CONFIG = {"model_type": "qwen3", "max_position_embeddings": 40960}


def _model_folder(folder: Path, weights: dict[str, bytes], index: bool = False) -> Path:
    """A model folder as save_pretrained leaves it: the bundled tokenizer's files, config.json,
    the weights files and, sharded, the index naming them."""
    shutil.copytree(bundled_qwen3_dir(), folder)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    for name, data in weights.items():
        (folder / name).write_bytes(data)
    if index:
        weight_map = {f"layer.{i}": name for i, name in enumerate(sorted(weights))}
        body = {"metadata": {"total_size": sum(map(len, weights.values()))}, "weight_map": weight_map}
        (folder / "model.safetensors.index.json").write_text(json.dumps(body))
    return folder


def test_the_fingerprint_changes_with_the_config_and_with_the_weights_values(tmp_path):
    """Two checkpoints of one training run share config.json and, sharded alike, the index: the
    fingerprint still tells them apart by their weights, and is stable for one folder."""
    shards = {"model-00001-of-00002.safetensors": b"a" * 3000, "model-00002-of-00002.safetensors": b"b" * 3000}
    step_99 = _model_folder(tmp_path / "step99", shards, index=True)
    step_199 = _model_folder(tmp_path / "step199", shards | {"model-00002-of-00002.safetensors": b"c" * 3000}, True)
    assert model_fingerprint(step_99) == model_fingerprint(step_99) != model_fingerprint(step_199)
    single = _model_folder(tmp_path / "single", {"model.safetensors": b"w" * 5000})
    before = model_fingerprint(single)
    (single / "config.json").write_text(json.dumps(CONFIG | {"max_position_embeddings": 8192}))
    assert len(before) == 64 and model_fingerprint(single) != before
    assert model_fingerprint(tmp_path) is None  # no config.json: not a model folder


def test_without_a_model_folder_or_a_name_every_fact_is_unknown():
    assert model_facts(None, BUNDLED_QWEN3, []) == {"name": None, "path": None, "sha256": None}


@contextmanager
def _models_server(listing: object, status: int = 200) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(listing).encode() if self.path == "/v1/models" else b"{}"
            self.send_response(status if self.path == "/v1/models" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("listing", "status", "name"),
    [
        ({"object": "list", "data": [{"id": "/models/my-memagent", "object": "model"}]}, 200, "/models/my-memagent"),
        ({"data": [{"id": "a"}, {"id": "b"}]}, 200, None),  # which one ran is --model's to say
        ({"error": "not found"}, 404, None),
    ],
)
def test_a_url_only_run_takes_the_name_the_server_serves(listing, status, name):
    with _models_server(listing, status) as url:
        assert served_model_name(ClientSettings(url, connect_timeout_s=5.0)) == name
        assert model_facts(None, BUNDLED_QWEN3, [ClientSettings(url)])["name"] == name
        assert model_facts("given", BUNDLED_QWEN3, [ClientSettings(url)])["name"] == "given"


def _evaluate(tokenizer, tmp_path: Path, *extra: str) -> dict:
    item = {"input": "Which city?", "answers": ["Quito"], "context": "It is Quito. " * 20}
    items = [item | {"index": i} for i in range(2)]
    data = tmp_path / "data" / "eval_5.json"
    data.parent.mkdir(parents=True)
    data.write_text(json.dumps(items))
    out = tmp_path / "out"
    with scripted_engine(tokenizer, lambda prompt, seed: "Quito") as engine:
        argv = ["--data", str(data), "--output-dir", str(out), "--url", engine.url, "--protocol", "vllm"]
        assert eval_ruler_hqa.main([*argv, "--max-final", "16", "--no-plot", *extra]) == 0
    return json.loads((out / "summary.json").read_text())["run"]["model"]


def test_a_runs_summary_names_the_model_folder_it_read_and_its_fingerprint(tokenizer, tmp_path):
    """run-eval.sh passes MODEL_PATH as --tokenizer: the folder and its fingerprint are recorded,
    and its path is the name where the server gives none."""
    folder = _model_folder(tmp_path / "my-memagent", {"model.safetensors": b"w" * 4096})
    model = _evaluate(tokenizer, tmp_path, "--tokenizer", str(folder))
    assert model == {"name": str(folder), "path": str(folder), "sha256": model_fingerprint(folder)}


def test_compare_says_unknown_for_a_run_that_did_not_record_its_model(tokenizer, tmp_path, capsys):
    named = {"name": "/models/a", "path": "/models/a", "sha256": "f" * 64}
    a = evaluation_run(tokenizer, tmp_path / "a", {"50": 2}, facts={"mode": "memagent", "model": named})
    b = evaluation_run(tokenizer, tmp_path / "b", {"50": 2}, facts={"mode": "memagent", "model": None})
    c = evaluation_run(tokenizer, tmp_path / "c", {"50": 2}, facts={"mode": "memagent"})
    assert compare.main([str(a), str(b), "--output-dir", str(tmp_path / "ab")]) == 0
    differing = json.loads((tmp_path / "ab" / "compare.json").read_text())["settings_that_differ"]
    assert differing == {"model": {"memagent: a": f"/models/a (sha256 {'f' * 12})", "memagent: b": "unknown"}}
    capsys.readouterr()
    assert compare.main([str(b), str(c), "--output-dir", str(tmp_path / "bc")]) == 0
    assert json.loads((tmp_path / "bc" / "compare.json").read_text())["settings_that_differ"] == {}
    settings = [line for line in capsys.readouterr().out.splitlines() if "model" in line]
    assert settings and all("unknown" in line for line in settings)  # never "the same model in every run"
