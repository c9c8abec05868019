"""slime / vime hooks: run the memory agent for one sample and hand back its turns as samples.

    --custom-generate-function-path mem_agent.rollout.generate
    --custom-rm-path mem_agent.rollout.reward
    --custom-reward-post-process-path mem_agent.rollout.reward_post_process
    --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data

Training (`evaluation=False`) returns Multi-Conv output: one Sample per turn (each memory turn
and the final turn, each its own prompt and response), all carrying the trajectory's `rollout_id`
(the input's `index`, the host's fan-out convention) and its `group_index`. The final answer's
strict reward is set on every turn, so the host's reward model is not called again (it skips
samples whose reward is set); advantages are computed per trajectory in `reward_post_process` /
`custom_convert` and broadcast to turns. Evaluation returns only the final-answer Sample, so the
host's eval accuracy is per question, not per turn.

Rewards follow the host's flags (`reward_fields`): a number, or with `--reward-key` a dict that
carries the strict reward under that key and the accuracy fields beside it. Host flags that cannot
work with a fan-out are refused at the first call, before any request (`host_flags`).

Statuses: a turn cut by max_tokens is TRUNCATED and still trained (MemAgent keeps cut memories).
A trajectory with an aborted turn is ABORTED in every sample. slime and vime then skip the reward
model for the whole list and keep it in its group; such a group reaches training only if it
finished before the step's own abort (an engine restarted by fault tolerance, an operator's
abort), so every row is loss-masked here, rewarded 0 and left out of its group's mean. Groups
still running at the step's abort are dropped by the host (--partial-rollout, which would
re-queue them, is refused). A trajectory whose request failed for good (GenerationError) is
FAILED with the reason in `metadata["error"]` and treated like an aborted one: a half
trajectory is never trained as if complete.

Abort: `generate.abort_mode = "request"`. A host that reads the attribute (current vime) ends a
rollout by cancelling this coroutine: the cancellation closes our in-flight HTTP request (the
engine drops it) and no later turn is sent, while other requests on the engines are left alone.
A host that does not read it (slime HEAD 624b824) aborts every request on every engine instead;
each trajectory then ends ABORTED at its next turn, and one that was between two turns at that
moment may send its next turn after the sweep.

Token limits are MEM_MAX_MEMORY and MEM_MAX_FINAL, not the host's --rollout-max-response-len;
sampling and the router come from the host's args (`host_client`).
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from mem_agent.agent.records import Trajectory, TrajectoryStatus, Turn, TurnKind
from mem_agent.agent.scoring import AnswerScores, ReportingRules, score_answer
from mem_agent.agent.step_rewards import recall_hit, recall_stats, released_turn_input, turn_state_rewards
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.host.clients import client_for, forget_clients, sampling_from_host
from mem_agent.host.flags import check_host_args
from mem_agent.host.hook_config import scored_rows, settings
from mem_agent.host.reward_fields import reward_record
from mem_agent.host.trajectory_rows import META, ground_truths, info_of, untrainable_status
from mem_agent.settings.config import AgentMode, MemAgentConfig
from mem_agent.tokenization.tokenizer import load_tokenizer

__all__ = ["generate", "reset_caches", "reward", "reward_post_process"]

logger = logging.getLogger(__name__)


@functools.cache
def _agent(hf_checkpoint: str, config: MemAgentConfig) -> MemoryAgent:
    return MemoryAgent(load_tokenizer(hf_checkpoint), config)


def reset_caches() -> None:
    """Forget settings, agents and clients (tests change MEM_* between cases)."""
    settings.cache_clear()
    _agent.cache_clear()
    forget_clients()


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any], evaluation: bool = False) -> Any:
    """The custom generate hook: a Sample in, a list of turn Samples (training) or one (evaluation)."""
    config = settings()
    check_host_args(args, training=not evaluation, config=config)
    agent = _agent(str(args.hf_checkpoint), config)
    metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
    context = metadata.get("context")
    if not isinstance(context, str) or not isinstance(sample.prompt, str):
        trajectory = Trajectory(
            turns=[],
            status=TrajectoryStatus.FAILED,
            error="sample needs a str prompt and a str metadata['context'] (see prepare_data.py)",
        )
    else:
        trajectory = await agent.run(
            sample.prompt, context, client_for(args, config), sampling_from_host(sampling_params)
        )
    if trajectory.status is not TrajectoryStatus.COMPLETED:
        logger.warning("mem_agent: sample %s ended %s: %s", sample.index, trajectory.status, trajectory.error)
    builder = _SampleBuilder(args, sample, trajectory, agent)
    return builder.final_sample() if evaluation else builder.turn_samples()


# The host cancels this coroutine to end a rollout instead of aborting every engine (see above).
generate.abort_mode = "request"  # type: ignore[attr-defined]


class _SampleBuilder:
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
        self.outcome = _outcome(trajectory.status, self.reward)
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


def _outcome(status: TrajectoryStatus, strict: float) -> str:
    """The reward category (`--log-reward-category outcome`): correct, wrong, failed or aborted."""
    if status is not TrajectoryStatus.COMPLETED:
        return status.value
    return "correct" if strict > 0 else "wrong"


def _is_plain(value: object) -> bool:
    return isinstance(value, str | int | float | bool | type(None))


async def reward(args: Any, sample_or_samples: Any, **kwargs: Any) -> Any:
    """The custom reward hook: strict reward of the trajectory's final answer, for one or many samples.

    Shaped like the rewards generate sets (a number, or a dict under --reward-key): the host
    stores whatever this returns in `Sample.reward` and reads it back with its own flags.
    """
    if isinstance(sample_or_samples, list):
        return [_reward_of(args, sample) for sample in sample_or_samples]
    return _reward_of(args, sample_or_samples)


def _reward_of(args: Any, sample: Any) -> Any:
    info = info_of(sample)
    untrainable = untrainable_status(sample)  # the rule the advantages and the filters follow too
    if untrainable is not None:
        return reward_record(args, 0.0, None, _outcome(TrajectoryStatus(untrainable), 0.0))
    rules = ReportingRules.of(settings())
    scores = score_answer(info.get("answer", sample.response), ground_truths(sample), rules=rules)
    return reward_record(args, scores.strict, scores, _outcome(TrajectoryStatus.COMPLETED, scores.strict))


def reward_post_process(args: Any, samples: Sequence[Any]) -> tuple[list[float], list[float]]:
    """(raw rewards, advantages) per row: GRPO over trajectories grouped by group_index.

    The host's own normalisation reshapes rows into groups of n; with a fan-out the row count per
    group varies, so grouping must use group_index, and statistics must count each trajectory once.
    """
    scored = scored_rows(args, samples)
    return scored.raw_rewards, scored.advantages
