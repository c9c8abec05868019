"""Is every training row what the model saw? Recompute each response token's logprob with transformers.

A row (`tokens` = prompt + response, `response_length`, `loss_mask`, `rollout_log_probs`) is what
the trainer's loss sees. If it is exactly what the inference engine saw and sampled, then one
forward pass of the same weights over `tokens` gives back the engine's logprobs: the logits at
position t predict token t + 1, so the response tokens are scored by the logits at positions
P - 1 .. P + R - 2 (P prompt tokens, R response tokens). Checked per row:

- shape: 0 < R < len(tokens), and one loss-mask entry and one logprob per response token;
- boundary: the prompt ends with the chat template's generation prompt (`<|im_start|>assistant`
  and, thinking off, the empty think block): the response starts where the model's turn starts;
- mask: every response token is the engine's own (no tool text inside a turn), so a row trains
  all of its tokens or none, and a trajectory is trained or masked whole: all rows of a rollout
  share one mask value;
- logprobs: on trained rows, |recomputed - rollout| <= tolerance at every response token.

And per rollout step: the mean |recomputed - rollout| over every compared token is at most one
ulp (of each token's largest logit, averaged). Rounding disagreements between two correct
implementations are sporadic, most tokens agree to the bit, so that mean is a small fraction of
an ulp; a fault in how rows are built (a re-tokenising code path, logprobs after temperature, a
wrong dtype) moves every token of every row, and the mean exposes it even where each token's
move stays inside the per-token tolerance.

Tolerance, from the dtype the server computes in. vLLM returns raw logprobs (vLLM 0.32's default
`logprobs_mode="raw_logprobs"`: log_softmax in float32 of the model-dtype logits, before
temperature or top-p; at the rollout's temperature 1.0 and top_p 1.0 raw and processed agree).
A logprob is z_t - logsumexp(z). Two correct implementations in one dtype (different kernels,
summation orders, prefix caching) round each logit z_j to that dtype, and can land on
neighbouring values: |dz_j| <= 1 ulp(max |z|), so |d logprob| <= 2 ulp(max |z|) (the logsumexp
moves by a probability-weighted mean of the dz_j). In bfloat16 the rounding of the logits
dominates (hidden-state rounding, 2^-9 relative, stays under one output ulp), so the tolerance is
2 ulps of the position's largest logit: 0.125 for the tiny Qwen3, whose logits stay under 16. In
float32 the output rounding is far smaller than the error accumulated through the layers, so the
tolerance is 16 ulps (1.5e-5 for logits under 16). Figures are in bench/bench_consistency.py,
the corruptions this must catch in bench/row_corruptions.py.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.row_rollout import TrainRow

ULPS = {"bfloat16": 2, "float32": 16}  # see the module docstring
_ENGINE_DTYPE = re.compile(r"\bdtype=torch\.(\w+)")


def served_dtype(server_log: Path) -> str:
    """The dtype vLLM computes in, from the engine configuration it logs at start (last start in the log)."""
    found = _ENGINE_DTYPE.findall(server_log.read_text(errors="replace"))
    if not found:
        raise ValueError(f"{server_log}: no 'dtype=torch.*' in the engine configuration lines")
    return found[-1]


@dataclass(frozen=True)
class RowCheck:
    """One row's verdict: what was compared and every problem found (empty: consistent)."""

    row: TrainRow
    abs_diff: np.ndarray  # per response token; empty when the logprobs were not compared
    ulp: np.ndarray  # per response token: one ulp of its position's largest logit in the model's dtype
    tolerance: np.ndarray  # per response token: ULPS[dtype] x ulp
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class KindFigures:
    """Figures of one (mode, row kind): how much was compared and how far apart it was."""

    rows: int = 0
    tokens: int = 0
    max_abs_diff: float = 0.0
    sum_abs_diff: float = 0.0
    max_over_tolerance: float = 0.0
    failed_rows: int = 0

    @property
    def mean_abs_diff(self) -> float:
        return self.sum_abs_diff / self.tokens if self.tokens else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {
            "rows": self.rows,
            "tokens": self.tokens,
            "max_abs_diff": float(self.max_abs_diff),
            "mean_abs_diff": float(self.mean_abs_diff),
            "max_over_tolerance": float(self.max_over_tolerance),
            "failed_rows": self.failed_rows,
        }


class ReferenceModel:
    """The served weights, loaded by transformers in the server's dtype, scoring rows on CPU."""

    def __init__(self, model_path: Path, dtype: str, *, thinking: bool = False) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if dtype not in ULPS:
            raise ValueError(f"dtype {dtype!r}: expected one of {sorted(ULPS)}")
        self.dtype = dtype
        self.torch_dtype = getattr(torch, dtype)
        self.model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=self.torch_dtype).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path))
        self.generation_prompt = generation_prompt_ids(self.tokenizer, thinking)

    def response_logprobs(self, tokens: Sequence[int], response_length: int) -> tuple[np.ndarray, np.ndarray]:
        """(logprob of each response token given its prefix, the largest |logit| at its position)."""
        import torch

        ids = torch.tensor([list(tokens)], dtype=torch.long)
        with torch.inference_mode():
            # The last R + 1 positions; the logits at the very last one predict past the row.
            logits = self.model(input_ids=ids, logits_to_keep=response_length + 1).logits[0, :-1]
            logprobs = logits.log_softmax(dim=-1, dtype=torch.float32)
            chosen = logprobs.gather(1, ids[0, -response_length:, None])[:, 0]
            largest = logits.abs().amax(dim=-1).float()
        return chosen.numpy().astype(np.float64), largest.numpy().astype(np.float64)

    def ulp(self, largest_logit: np.ndarray) -> np.ndarray:
        """One unit in the last place, in the model's dtype, of each position's largest logit."""
        import torch

        eps = torch.finfo(self.torch_dtype).eps
        exponent = np.floor(np.log2(np.maximum(largest_logit, np.finfo(np.float32).tiny)))
        return eps * np.exp2(exponent)

    def tolerance(self, largest_logit: np.ndarray) -> np.ndarray:
        """ULPS[dtype] ulps of each position's largest logit (see the docstring)."""
        return ULPS[self.dtype] * self.ulp(largest_logit)


def generation_prompt_ids(tokenizer: Any, thinking: bool) -> list[int]:
    """The ids the chat template appends to open the assistant's turn (what every prompt must end with)."""
    chat = [{"role": "user", "content": "x"}]
    opened = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True, enable_thinking=thinking)
    closed = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=False, enable_thinking=thinking)
    if not opened.startswith(closed) or opened == closed:
        raise ValueError("the chat template adds no generation prompt after the conversation")
    return list(tokenizer.encode(opened[len(closed) :], add_special_tokens=False))


def _shape_problem(row: TrainRow) -> str | None:
    length = row.response_length
    if not 0 < length < len(row.tokens):
        return f"shape: response_length {length} for {len(row.tokens)} tokens"
    if len(row.loss_mask) != length or len(row.rollout_log_probs) != length:
        return f"shape: {len(row.loss_mask)} mask entries and {len(row.rollout_log_probs)} logprobs for {length}"
    return None


def mask_values(rows: Sequence[TrainRow]) -> dict[int, set[int]]:
    values: dict[int, set[int]] = defaultdict(set)
    for row in rows:
        values[row.rollout_id].update(int(value) for value in row.loss_mask)
    return values


def check_row(model: ReferenceModel, row: TrainRow, rollout_mask: set[int]) -> RowCheck:
    """Every check of the module docstring on one row; `rollout_mask` = mask values of its whole rollout."""
    empty = np.zeros(0)
    shape = _shape_problem(row)
    if shape is not None:
        return RowCheck(row, empty, empty, empty, (shape,))
    problems = []
    prompt = row.tokens[: len(row.tokens) - row.response_length]
    tail = model.generation_prompt
    if prompt[-len(tail) :] != tail:
        problems.append("boundary: the prompt does not end with the assistant turn's opening")
    if len(rollout_mask) > 1:
        problems.append(f"mask: rollout {row.rollout_id} mixes trained and masked tokens")
    if set(row.loss_mask) == {0}:  # a masked trajectory: nothing of it is trained, nothing to compare
        return RowCheck(row, empty, empty, empty, tuple(problems))
    recomputed, largest = model.response_logprobs(row.tokens, row.response_length)
    diff = np.abs(recomputed - np.asarray(row.rollout_log_probs, dtype=np.float64))
    ulp = model.ulp(largest)
    tolerance = ULPS[model.dtype] * ulp
    bad = np.flatnonzero(~(diff <= tolerance))  # NaN counts as bad
    if bad.size:
        first = int(bad[0])
        problems.append(
            f"logprobs: {bad.size} of {row.response_length} tokens beyond tolerance, first at response "
            f"token {first}: |diff| {diff[first]:.3g} > {tolerance[first]:.3g}"
        )
    return RowCheck(row, diff, ulp, tolerance, tuple(problems))


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the reference forward passes on `count` threads (the machine is shared), then restore."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def check_rows(model: ReferenceModel, rows: Sequence[TrainRow], *, threads: int = 1) -> list[RowCheck]:
    """Check every row (rollout-wide mask consistency needs all rows of a step at once)."""
    masks = mask_values(rows)
    with torch_threads(threads):
        return [check_row(model, row, masks[row.rollout_id]) for row in rows]


@dataclass(frozen=True)
class StepCheck:
    """A rollout step's verdict: every row consistent, and the mean |diff| within one ulp."""

    rows: int
    failed_rows: int
    tokens: int
    mean_abs_diff: float
    mean_ulp: float

    @property
    def mean_over_ulp(self) -> float:
        return self.mean_abs_diff / self.mean_ulp if self.tokens else 0.0

    @property
    def ok(self) -> bool:
        return self.failed_rows == 0 and self.mean_over_ulp <= 1.0  # NaN fails


def step_check(checks: Sequence[RowCheck]) -> StepCheck:
    """Aggregate the row checks of one rollout step (see the module docstring for the mean rule)."""
    compared = [check for check in checks if check.abs_diff.size]
    diffs = np.concatenate([c.abs_diff for c in compared]) if compared else np.zeros(0)
    ulps = np.concatenate([c.ulp for c in compared]) if compared else np.zeros(0)
    return StepCheck(
        rows=len(checks),
        failed_rows=sum(not check.ok for check in checks),
        tokens=int(diffs.size),
        mean_abs_diff=float(diffs.mean()) if diffs.size else 0.0,
        mean_ulp=float(ulps.mean()) if ulps.size else 1.0,
    )


def figures(checks: Sequence[RowCheck]) -> dict[str, dict[str, float | int]]:
    """Per "mode/kind": rows and tokens compared, max and mean |diff|, max |diff| / tolerance, failures."""
    table: dict[str, KindFigures] = defaultdict(KindFigures)
    for check in checks:
        entry = table[f"{check.row.mode}/{check.row.kind}"]
        entry.rows += 1
        entry.failed_rows += int(not check.ok)
        if check.abs_diff.size:
            entry.tokens += int(check.abs_diff.size)
            entry.sum_abs_diff += float(check.abs_diff.sum())
            entry.max_abs_diff = max(entry.max_abs_diff, float(check.abs_diff.max()))
            ratio = float(np.max(check.abs_diff / check.tolerance))
            entry.max_over_tolerance = max(entry.max_over_tolerance, ratio if math.isfinite(ratio) else math.inf)
    return {key: table[key].as_dict() for key in sorted(table)}
