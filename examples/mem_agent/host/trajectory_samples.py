"""One Trajectory as the host's Samples: a row per turn (training) or one per question (evaluation).

Every row is a copy of the host's own Sample without the document (`metadata["context"]` would be
copied into each turn otherwise), carrying the turn's prompt and response ids, its logprobs, the
trajectory's reward in the host's layout (`reward_fields`) and what the metrics and trajectory
records read (`metadata["mem_agent"]`, observability/metrics.py). A trajectory that did not
complete is loss-masked on every row and rewarded 0, with the reason in `metadata["error"]`; one
that produced no turn keeps its place with one fully masked token.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from mem_agent.agent.records import Trajectory, TrajectoryStatus, Turn, TurnKind
from mem_agent.agent.scoring import AnswerScores, ReportingRules, score_answer
from mem_agent.agent.step_rewards import recall_hit, recall_stats, released_turn_input, turn_state_rewards
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.host.reward_fields import reward_record
from mem_agent.host.trajectory_rows import META, ground_truths
from mem_agent.settings.config import AgentMode

__all__ = ["TrajectorySamples", "outcome"]


class TrajectorySamples:
    """Maps one Trajectory onto host Samples without copying the document into each of them."""

    def __init__(self, args: Any, sample: Any, trajectory: Trajectory, agent: MemoryAgent) -> None:
        self.args = args
        self.sample = sample
        self.trajectory = trajectory
        self.tokenizer = agent.tokenizer
        self.rules = ReportingRules.of(agent.config)
        self.status_type = type(sample).Status
        self.truths = ground_truths(sample)
        completed = trajectory.status is TrajectoryStatus.COMPLETED
        self.scores: AnswerScores | None = (
            score_answer(trajectory.answer, self.truths, rules=self.rules) if completed else None
        )
        self.reward = self.scores.strict if self.scores else 0.0
        self.score_map = (
            None
            if self.scores is None
            else {name: getattr(self.scores, name) for name in ("strict", "sub_em", "em", "f1")}
        )
        self.special_ids = frozenset(int(token) for token in self.tokenizer.all_special_ids)
        self.outcome = outcome(trajectory.status, self.reward)
        self.error = None if completed else trajectory.error or f"trajectory {trajectory.status.value}"
        self.template = copy.copy(sample)
        self.template.metadata = {k: v for k, v in (sample.metadata or {}).items() if k != "context"}
        self.trained_turns = [turn for turn in trajectory.turns if len(turn.response_ids)]
        self.state_rewards: dict[int, float] = {}
        self.trajectory_facts: dict[str, float] = {}
        if agent.config.mode is AgentMode.REMEMR1 and completed:
            self.state_rewards = turn_state_rewards(
                trajectory.turns,
                trajectory.answer,
                self.truths,
                released_turn_input(self.tokenizer),
                agent.config.rememr1_coverage,
            )
            self.trajectory_facts = recall_stats(trajectory.turns, self.truths)
            self.trajectory_facts["mean_state_reward"] = sum(self.state_rewards.values()) / len(self.state_rewards)

    def _info(self, turn: Turn | None, num_samples: int) -> dict[str, Any]:
        return {
            "turn": turn.kind.value if turn else "none",
            "step": turn.step if turn else -1,
            "num_turns": len(self.trajectory.turns),
            "num_samples": num_samples,  # rows of this trajectory: lets the convert spot a trimmed one
            "trajectory_status": self.trajectory.status.value,
            "finish_reason": turn.finish_reason.value if turn else None,
            "error": self.error,
            "answer": self.trajectory.answer,
            "scores": self.score_map,  # the final answer's, on every row: the log hook reads any one
            "has_box": bool(self.scores and self.scores.has_box),
            "context_tokens": self.trajectory.context_tokens,
            "dropped_tokens": self.trajectory.dropped_tokens,
            "num_chunks": self.trajectory.num_chunks,
            **({} if turn is None else self._turn_facts(turn)),
            **self.trajectory_facts,
        }

    def _turn_facts(self, turn: Turn, with_text: bool = True) -> dict[str, Any]:
        """What the metrics and the trajectory records read of one turn (observability/metrics.py)."""
        facts: dict[str, Any] = {key: value for key, value in turn.extras.items() if _is_plain(value)}
        facts["memory_tokens"] = len(turn.memory_ids)
        facts["response_tokens"] = len(turn.response_ids)
        if turn.step in self.state_rewards:
            facts["state_reward"] = self.state_rewards[turn.step]
        if isinstance(facts.get("recalled"), str) and facts["recalled"]:
            facts["recall_hit"] = recall_hit(facts["recalled"], self.truths)
        if (
            with_text
            and turn.kind is TurnKind.MEMORY
            and "memory_text" not in facts
            and not self._memory_is_response(turn)
        ):
            # The row's `response` already holds the memory's text when the memory is the response
            # (MemAgent, no thinking): only a memory that differs from it is decoded and carried.
            facts["memory_text"] = self.tokenizer.decode(turn.memory_ids.tolist(), skip_special_tokens=True)
        return facts

    def _memory_is_response(self, turn: Turn) -> bool:
        memory, response = turn.memory_ids, turn.response_ids
        if len(memory) > len(response) or not np.array_equal(memory, response[: len(memory)]):
            return False
        return all(int(token) in self.special_ids for token in response[len(memory) :])

    def _status(self, turn: Turn | None) -> Any:
        if self.trajectory.status is TrajectoryStatus.ABORTED:
            return self.status_type.ABORTED
        if self.trajectory.status is TrajectoryStatus.FAILED:
            return self.status_type.FAILED
        return self.status_type.TRUNCATED if turn is not None and turn.truncated else self.status_type.COMPLETED

    def _row(self, turn: Turn | None, num_samples: int) -> Any:
        row = copy.deepcopy(self.template)
        if turn is None:  # a trajectory that produced no turn: one fully masked token keeps its place
            eos = int(self.tokenizer.eos_token_id)
            prompt, response, logprobs = [eos], [eos], [0.0]
        else:  # python ints and floats: the host tensorises lists, and numpy scalars do not pickle small
            prompt, response, logprobs = turn.prompt_ids.tolist(), turn.response_ids.tolist(), turn.logprobs.tolist()
        trainable = self.error is None and turn is not None
        row.tokens = prompt + response
        row.response = self.tokenizer.decode(response, skip_special_tokens=True)  # for logs only
        row.response_length = len(response)
        row.loss_mask = [int(trainable)] * len(response)
        row.rollout_log_probs = logprobs
        row.reward = reward_record(self.args, self.reward, self.scores, self.outcome)
        row.status = self._status(turn)
        row.rollout_id = self.sample.index
        row.metadata[META] = self._info(turn, num_samples)
        if self.error is not None:
            row.metadata["error"] = self.error
        return row

    def turn_samples(self) -> list[Any]:
        if not self.trained_turns:
            return [self._row(None, 1)]
        return [self._row(turn, len(self.trained_turns)) for turn in self.trained_turns]

    def final_sample(self) -> Any:
        final = self.trajectory.final_turn
        row = self._row(final if final is not None and len(final.response_ids) else None, 1)
        scores = self.scores or score_answer(self.trajectory.answer, self.truths, rules=self.rules)
        row.metadata[META].update(sub_em=scores.sub_em, em=scores.em, f1=scores.f1, extracted=scores.extracted)
        # Evaluation hands the host one row per question: the turns it stands for travel with it,
        # so the eval log hook can report turns, memory lengths and cuts per eval set.
        row.metadata[META]["turn_facts"] = [self._turn_summary(turn) for turn in self.trajectory.turns]
        return row

    def _turn_summary(self, turn: Turn) -> dict[str, Any]:
        facts = self._turn_facts(turn, with_text=False)  # counts only: the eval metrics read no text
        summary = {"turn": turn.kind.value, "step": turn.step, "finish_reason": turn.finish_reason.value}
        summary |= {key: facts[key] for key in _SUMMARY_KEYS if key in facts}
        summary["recall_asked"] = bool(facts.get("recall_query"))
        return summary


_SUMMARY_KEYS = ("memory_tokens", "response_tokens", "state_reward", "recall_hit")


def outcome(status: TrajectoryStatus, strict: float) -> str:
    """The reward category (`--log-reward-category outcome`): correct, wrong, failed or aborted."""
    if status is not TrajectoryStatus.COMPLETED:
        return status.value
    return "correct" if strict > 0 else "wrong"


def _is_plain(value: object) -> bool:
    return isinstance(value, str | int | float | bool | type(None))
