"""The corruptions the row-consistency check must catch, applied to real rows, and how often it does.

Each one is a bug that has happened, or easily could, between an engine's output and a trainer's
loss: the response spliced one token off its logprobs, the prompt rebuilt from its text, the loss
mask or the response length off by one. A corruption is applied to every row of a real rollout
step at once (a bug in how rows are built hits them all); the check must then fail the step, and
we count how many of the changed rows it reports on their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bench.row_consistency import ReferenceModel, StepCheck, check_rows, step_check
from bench.row_rollout import TrainRow


def _split(row: TrainRow) -> tuple[list[int], list[int]]:
    cut = len(row.tokens) - row.response_length
    return row.tokens[:cut], row.tokens[cut:]


def splice_off_by_one(row: TrainRow, tokenizer: Any) -> TrainRow:
    """The response one token late against its logprobs (the splice repeated the prompt's last token)."""
    prompt, response = _split(row)
    return replace(row, tokens=[*prompt, prompt[-1], *response[:-1]])


def retokenised_prompt(row: TrainRow, tokenizer: Any) -> TrainRow:
    """The prompt ids replaced by encode(decode(prompt)): the text is the same, the ids the model saw are not."""
    prompt, response = _split(row)
    text = tokenizer.decode(prompt, skip_special_tokens=False)
    return replace(row, tokens=[*tokenizer.encode(text, add_special_tokens=False), *response])


def shifted_loss_mask(row: TrainRow, tokenizer: Any) -> TrainRow:
    """The loss mask one token late: the first response token untrained, a token past the end trained."""
    return replace(row, loss_mask=[0, *row.loss_mask[:-1]])


def response_length_plus_one(row: TrainRow, tokenizer: Any) -> TrainRow:
    """response_length one too long (the prompt's last token trained), mask and logprobs padded to fit."""
    return replace(
        row,
        response_length=row.response_length + 1,
        loss_mask=[1, *row.loss_mask],
        rollout_log_probs=[0.0, *row.rollout_log_probs],
    )


def response_length_minus_one(row: TrainRow, tokenizer: Any) -> TrainRow:
    """response_length one too short (the first response token counted as prompt), mask and logprobs cut."""
    return replace(
        row,
        response_length=row.response_length - 1,
        loss_mask=row.loss_mask[1:],
        rollout_log_probs=row.rollout_log_probs[1:],
    )


Corruption = Callable[[TrainRow, Any], TrainRow]
CORRUPTIONS: dict[str, Corruption] = {
    "splice_off_by_one": splice_off_by_one,
    "retokenised_prompt": retokenised_prompt,
    "shifted_loss_mask": shifted_loss_mask,
    "response_length_plus_one": response_length_plus_one,
    "response_length_minus_one": response_length_minus_one,
}


@dataclass(frozen=True)
class Detection:
    """What the check made of a step whose every row went through one corruption."""

    name: str
    changed: int  # rows the corruption changed (a prompt may re-tokenise to itself)
    reported: int  # of those, rows the check reported
    step: StepCheck  # the whole step's verdict
    # Smallest max |diff| / tolerance over the changed rows that pass every structural check (the
    # logprob comparison alone must catch them): the weakest row's margin; inf when there are none.
    weakest_ratio: float

    @property
    def step_caught(self) -> bool:
        return not self.step.ok


def detection(model: ReferenceModel, rows: Sequence[TrainRow], name: str, *, threads: int = 1) -> Detection:
    """Corrupt every row of the step with `name`, check the step, and count the rows reported."""
    corrupt = CORRUPTIONS[name]
    corrupted = [corrupt(row, model.tokenizer) for row in rows]
    checks = check_rows(model, corrupted, threads=threads)
    changed = [check for check, row in zip(checks, rows, strict=True) if check.row != row]
    weakest = math.inf
    for check in changed:
        if check.abs_diff.size and all(problem.startswith("logprobs") for problem in check.problems):
            weakest = min(weakest, float(np.max(check.abs_diff / check.tolerance)))
    reported = sum(not check.ok for check in changed)
    return Detection(name, len(changed), reported, step_check(checks), weakest)
