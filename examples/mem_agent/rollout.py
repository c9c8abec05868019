"""slime / vime hooks: run the memory agent for one sample and hand back its turns as samples.

    --custom-generate-function-path mem_agent.rollout.generate
    --custom-rm-path mem_agent.rollout.reward
    --custom-reward-post-process-path mem_agent.rollout.reward_post_process
    --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data

Training (`evaluation=False`) returns Multi-Conv output: one Sample per turn (each memory turn
and the final turn, each its own prompt and response), all carrying the trajectory's `rollout_id`
(the input's `index`, the host's fan-out convention) and its `group_index`. The final answer's
strict reward is set on every turn, so the host's reward model is not called again; advantages
are computed per trajectory in `reward_post_process` / `custom_convert` and broadcast to turns.

Evaluation returns only the final-answer Sample, so the host's eval accuracy is per question.

Statuses: a turn cut by max_tokens is TRUNCATED and still trained (MemAgent keeps cut memories);
a trajectory with an aborted turn is ABORTED in every sample and a trajectory whose request
failed for good is FAILED with the reason in `metadata["mem_agent"]["error"]`: both are fully
loss-masked, rewarded 0 and left out of their group's statistics, so a half trajectory is never
trained as if complete.

Token limits are MEM_MAX_MEMORY and MEM_MAX_FINAL, not the host's --rollout-max-response-len:
a memory turn and the final turn have different budgets. Sampling (temperature, top_p, top_k,
seed) is the host's. The router is `args.vllm_router_ip/port` (vime, protocol `vllm`) or
`args.sglang_router_ip/port` (slime, protocol `sglang`); MEM_PROTOCOL overrides the choice.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import weakref
from collections.abc import Sequence
from typing import Any

from mem_agent.advantages import TrajectoryOutcome, grpo_advantages
from mem_agent.config import MemAgentConfig, ProtocolChoice
from mem_agent.records import SamplingParams, Trajectory, TrajectoryStatus, Turn
from mem_agent.rollout_client import ApiProtocol, ClientSettings, RolloutClient
from mem_agent.scoring import score_answer, strict_reward
from mem_agent.tokenizer import load_tokenizer
from mem_agent.workflow import MemoryAgent

logger = logging.getLogger(__name__)

META = "mem_agent"  # our key inside Sample.metadata
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ClientSettings, RolloutClient]] = (
    weakref.WeakKeyDictionary()
)


@functools.cache
def settings() -> MemAgentConfig:
    """MEM_* settings, read once per process (the Ray actor's environment is fixed at start)."""
    return MemAgentConfig.from_env()


@functools.cache
def _agent(hf_checkpoint: str, config: MemAgentConfig) -> MemoryAgent:
    return MemoryAgent(load_tokenizer(hf_checkpoint), config)


async def close_clients() -> None:
    """Close this event loop's HTTP sessions (for a loop that is about to end, such as a test's)."""
    for client in _CLIENTS.pop(asyncio.get_running_loop(), {}).values():
        await client.close()


def reset_caches() -> None:
    """Forget settings, agents and clients (tests change MEM_* between cases)."""
    settings.cache_clear()
    _agent.cache_clear()
    _CLIENTS.clear()


def router_address(args: Any, config: MemAgentConfig) -> tuple[str, ApiProtocol]:
    """The router's base URL and wire protocol for this host trainer."""
    if getattr(args, "vllm_router_ip", None):
        host, port, native = args.vllm_router_ip, args.vllm_router_port, ApiProtocol.VLLM
    elif getattr(args, "sglang_router_ip", None):
        host, port, native = args.sglang_router_ip, args.sglang_router_port, ApiProtocol.SGLANG
    else:
        raise ValueError("args has neither vllm_router_ip (vime) nor sglang_router_ip (slime): no router to call")
    protocol = native if config.protocol is ProtocolChoice.AUTO else ApiProtocol(config.protocol.value)
    host = f"[{host}]" if ":" in str(host) and not str(host).startswith("[") else host  # a bare IPv6 address
    return f"http://{host}:{port}", protocol


def _request_limit(args: Any) -> int:
    """The host never has more requests in flight than its own rollout semaphore allows."""
    per_engine = getattr(args, "vllm_server_concurrency", None) or getattr(args, "sglang_server_concurrency", None)
    gpus, per_engine_gpus = getattr(args, "rollout_num_gpus", None), getattr(args, "rollout_num_gpus_per_engine", None)
    if per_engine and gpus and per_engine_gpus:
        return max(1, int(per_engine) * max(1, int(gpus) // int(per_engine_gpus)))
    return 512


def client_for(args: Any, config: MemAgentConfig) -> RolloutClient:
    """One client (one HTTP session) per event loop and router, reused by every call."""
    base_url, protocol = router_address(args, config)
    key = ClientSettings(
        base_url,
        protocol=protocol,
        max_concurrency=_request_limit(args),
        connect_timeout_s=config.connect_timeout_s,
        request_timeout_s=config.request_timeout_s,
        max_retries=config.max_retries,
    )
    per_loop = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = RolloutClient(key)
    return per_loop[key]


def sampling_from_host(params: dict[str, Any]) -> SamplingParams:
    seed = params.get("seed", params.get("sampling_seed"))
    top_k = params.get("top_k")
    return SamplingParams(
        temperature=float(params.get("temperature", 1.0)),
        top_p=float(params.get("top_p", 1.0)),
        top_k=int(top_k) if top_k is not None else -1,
        seed=int(seed) if seed is not None else None,
    )


def ground_truths(sample: Any) -> list[str]:
    metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
    truths = metadata.get("ground_truth")
    if isinstance(truths, str):
        return [truths]
    if isinstance(truths, list) and truths:
        return [str(truth) for truth in truths]
    return [str(sample.label)] if sample.label is not None else []


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any], evaluation: bool = False) -> Any:
    """The custom generate hook: a Sample in, a list of turn Samples (training) or one (evaluation)."""
    config = settings()
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
    builder = _SampleBuilder(sample, trajectory, agent)
    return builder.final_sample() if evaluation else builder.turn_samples()


class _SampleBuilder:
    """Maps one Trajectory onto host Samples without copying the document into each of them."""

    def __init__(self, sample: Any, trajectory: Trajectory, agent: MemoryAgent) -> None:
        self.sample = sample
        self.trajectory = trajectory
        self.tokenizer = agent.tokenizer
        self.status_type = type(sample).Status
        self.truths = ground_truths(sample)
        completed = trajectory.status is TrajectoryStatus.COMPLETED
        self.reward = strict_reward(trajectory.answer, self.truths) if completed else 0.0
        self.template = copy.copy(sample)
        self.template.metadata = {k: v for k, v in (sample.metadata or {}).items() if k != "context"}

    def _info(self, turn: Turn | None) -> dict[str, Any]:
        return {
            "turn": turn.kind.value if turn else "none",
            "step": turn.step if turn else -1,
            "num_turns": len(self.trajectory.turns),
            "trajectory_status": self.trajectory.status.value,
            "error": self.trajectory.error,
            "answer": self.trajectory.answer,
            "context_tokens": self.trajectory.context_tokens,
            "dropped_tokens": self.trajectory.dropped_tokens,
            "num_chunks": self.trajectory.num_chunks,
            **{key: value for key, value in (turn.extras if turn else {}).items() if _is_plain(value)},
        }

    def _status(self, turn: Turn | None) -> Any:
        if self.trajectory.status is TrajectoryStatus.ABORTED:
            return self.status_type.ABORTED
        if self.trajectory.status is TrajectoryStatus.FAILED:
            return self.status_type.FAILED
        return self.status_type.TRUNCATED if turn is not None and turn.truncated else self.status_type.COMPLETED

    def _row(self, turn: Turn | None) -> Any:
        row = copy.deepcopy(self.template)
        if turn is None:  # a trajectory that produced no turn: one fully masked token keeps its place
            eos = int(self.tokenizer.eos_token_id)
            prompt, response, logprobs = [eos], [eos], [0.0]
        else:
            prompt, response, logprobs = turn.prompt_ids.tolist(), turn.response_ids.tolist(), turn.logprobs.tolist()
        trainable = self.trajectory.status is TrajectoryStatus.COMPLETED and turn is not None
        row.tokens = prompt + response
        row.response = self.tokenizer.decode(response, skip_special_tokens=True)
        row.response_length = len(response)
        row.loss_mask = [int(trainable)] * len(response)
        row.rollout_log_probs = [float(value) for value in logprobs]
        row.reward = self.reward
        row.status = self._status(turn)
        row.rollout_id = self.sample.index
        row.metadata[META] = self._info(turn)
        return row

    def turn_samples(self) -> list[Any]:
        rows = [self._row(turn) for turn in self.trajectory.turns if len(turn.response_ids)]
        return rows or [self._row(None)]

    def final_sample(self) -> Any:
        final = self.trajectory.final_turn
        row = self._row(final if final is not None and len(final.response_ids) else None)
        scores = score_answer(self.trajectory.answer, self.truths)
        row.metadata[META].update(sub_em=scores.sub_em, em=scores.em, f1=scores.f1, extracted=scores.extracted)
        return row


def _is_plain(value: object) -> bool:
    return isinstance(value, str | int | float | bool | type(None))


async def reward(args: Any, sample_or_samples: Any, **kwargs: Any) -> float | list[float]:
    """The custom reward hook: strict reward of the trajectory's final answer, for one or many samples."""
    if isinstance(sample_or_samples, list):
        return [_reward_of(sample) for sample in sample_or_samples]
    return _reward_of(sample_or_samples)


def _reward_of(sample: Any) -> float:
    info = (sample.metadata or {}).get(META, {})
    if info and info.get("trajectory_status") != TrajectoryStatus.COMPLETED.value:
        return 0.0
    return strict_reward(info.get("answer", sample.response), ground_truths(sample))


def rollout_key(sample: Any) -> Any:
    return sample.rollout_id if sample.rollout_id is not None else sample.index


def trajectory_is_valid(sample: Any) -> bool:
    return sample.status not in (type(sample).Status.ABORTED, type(sample).Status.FAILED)


def reward_post_process(args: Any, samples: Sequence[Any]) -> tuple[list[float], list[float]]:
    """(raw rewards, advantages) per row: GRPO over trajectories grouped by group_index.

    The host's own normalisation reshapes rows into groups of n; with a fan-out the row count per
    group varies, so grouping must use group_index, and statistics must count each trajectory once.
    """
    outcomes: dict[Any, TrajectoryOutcome] = {}
    for sample in samples:
        key = rollout_key(sample)
        valid = trajectory_is_valid(sample)
        if key not in outcomes or not valid:
            outcomes[key] = TrajectoryOutcome(sample.group_index, key, float(sample.reward or 0.0), valid)
    advantages = grpo_advantages(outcomes.values(), std_normalize=settings().adv_std_norm)
    raw_rewards = [float(sample.reward or 0.0) for sample in samples]
    return raw_rewards, [advantages[rollout_key(sample)] for sample in samples]
