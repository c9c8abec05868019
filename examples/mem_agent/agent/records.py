"""Typed records that cross module boundaries: completions, turns and trajectories.

Token ids and logprobs are numpy arrays (int32 / float32): a 900K-token document and the
thousands of turns of a rollout step stay compact, and every consumer converts to lists only at
the edge where a host API asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from mem_agent.tokenization.tokenizer import TOKEN_DTYPE

LOGPROB_DTYPE = np.float32
# The ids a record keeps where it drops a prompt. Never `prompt[:0]`: a numpy slice holds its whole
# base array through `.base`, so an emptied 5K-token prompt would still cost its 20 KB for as long
# as the trajectory lives (benchmark 4: up to as much again as the documents' own ids).
NO_IDS = np.empty(0, dtype=TOKEN_DTYPE)
NO_IDS.flags.writeable = False


class FinishReason(StrEnum):
    STOP = "stop"  # the model ended the turn (EOS or a stop token, which is kept in token_ids)
    LENGTH = "length"  # cut by max_tokens
    ABORT = "abort"  # the server dropped the request (the trainer aborts in-flight work)


class TurnKind(StrEnum):
    MEMORY = "memory"
    FINAL = "final"


class TrajectoryStatus(StrEnum):
    COMPLETED = "completed"
    ABORTED = "aborted"  # a turn came back aborted: nothing of the trajectory may be trained
    FAILED = "failed"  # a request failed for good; `Trajectory.error` says why


class CompletionError(ValueError):
    """A server answer that breaks an invariant (token and logprob counts, max_tokens)."""


class TrainDataError(ValueError):
    """Host samples that break the host's row invariants (their shape, their reward's shape under
    the host's flags); the message names the row."""


class GenerationError(RuntimeError):
    """A request that failed for good (retries spent, or a 4xx); `reason` is kept in the record."""

    def __init__(self, reason: str, *, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """Sampling for every turn of a trajectory. MemAgent: 1.0 / 1.0 to train, 0.7 / 0.95 to evaluate."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """What the inference server generated for one prompt, exactly as it generated it.

    The ids are the server's own: they are trained on as they are, never decoded and
    re-encoded, because re-tokenising text does not reproduce the sampled ids and breaks the
    alignment of ids and logprobs.
    """

    token_ids: np.ndarray
    logprobs: np.ndarray
    finish_reason: FinishReason

    @classmethod
    def build(cls, token_ids: list[int], logprobs: list[float], finish_reason: FinishReason) -> Completion:
        if len(token_ids) != len(logprobs):
            raise CompletionError(f"server returned {len(token_ids)} token ids but {len(logprobs)} logprobs")
        return cls(
            token_ids=np.asarray(token_ids, dtype=TOKEN_DTYPE),
            logprobs=np.asarray(logprobs, dtype=LOGPROB_DTYPE),
            finish_reason=finish_reason,
        )

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])


@dataclass(slots=True)
class Turn:
    """One conversation of a trajectory: its own prompt and the model's response to it.

    Each turn is a fresh single-message chat, so each becomes its own training sample.
    `memory_ids` is the memory after a memory turn, and the memory the final turn answered from.
    """

    kind: TurnKind
    step: int  # chunk index for memory turns; the number of chunks for the final turn
    prompt_ids: np.ndarray
    completion: Completion
    memory_ids: np.ndarray
    extras: dict[str, object] = field(default_factory=dict)  # mode-specific facts (ReMemR1 recall)

    @property
    def response_ids(self) -> np.ndarray:
        return self.completion.token_ids

    @property
    def logprobs(self) -> np.ndarray:
        return self.completion.logprobs

    @property
    def finish_reason(self) -> FinishReason:
        return self.completion.finish_reason

    @property
    def truncated(self) -> bool:
        return self.completion.finish_reason is FinishReason.LENGTH


@dataclass(slots=True)
class Trajectory:
    """All turns of one agent run over one document, and how it ended."""

    turns: list[Turn]
    status: TrajectoryStatus
    answer: str = ""
    error: str | None = None
    context_tokens: int = 0
    dropped_tokens: int = 0  # tokens cut from the middle by MEM_MAX_CHUNKS (recorded, never silent)
    num_chunks: int = 0

    @property
    def final_turn(self) -> Turn | None:
        if self.turns and self.turns[-1].kind is TurnKind.FINAL:
            return self.turns[-1]
        return None

    @property
    def generated_tokens(self) -> int:
        return sum(len(turn.completion) for turn in self.turns)
