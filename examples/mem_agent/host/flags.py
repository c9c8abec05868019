"""Host trainer flags the memory agent supports, and the ones it refuses at the first call.

One prompt fans out into `n` trajectories, and each trajectory into a list of turn samples, so a
group the host's rollout loop holds is `n` lists, not `n` samples. Every slime HEAD / current
vime flag that reads rewards, groups or samples was checked against that shape (the host-flag
table of docs/host-flags.md lists them all). The supported ones need nothing here, or are checked for
values that cannot work; the others fail late and obscurely inside the host, or train on wrong
data, so `check_host_args` refuses them before the first request, with one line that names the
flag, the reason and the fix.

Supported as the host defines them: `--reward-key` / `--eval-reward-key` (dict rewards, see
`reward_fields`), our own trajectory-aware `--dynamic-sampling-filter-path`
(`mem_agent.dynamic_filter.*`), `--over-sampling-batch-size`, `--rollout-sample-hook-path` (every
turn sample passes through the hooks), evaluation with `--n-samples-per-eval-prompt` > 1 (one
final-answer sample per trajectory), `--log-reward-category outcome`,
`--rollout-max-context-len` (checked against the turn budgets), `--disable-grpo-std-normalization`
and `--disable-rewards-normalization` (read by `trajectory_rows.host_normalization`),
`--num-steps-per-rollout`, `--calculate-per-token-loss`, `--balance-data`, `--use-dynamic-batch-size`.
"""

from __future__ import annotations

from typing import Any

from mem_agent.host.reward_fields import CATEGORY_FIELD, RESERVED_KEYS
from mem_agent.settings.config import AgentMode, MemAgentConfig

OUR_FILTERS = (
    "mem_agent.dynamic_filter.keep_groups_with_reward_contrast",
    "mem_agent.dynamic_filter.keep_groups_with_reward_contrast_or_fill",
)
# Besides the chunk and the memories (_turn_budgets), a prompt holds its chat template, the question
# and the instructions: a few hundred tokens, which this allowance stands for.
PROMPT_ALLOWANCE_TOKENS = 512

__all__ = ["OUR_FILTERS", "HostConfigError", "check_host_args"]


class HostConfigError(ValueError):
    """A trainer flag the Multi-Conv output cannot work with; the message names the flag and the fix."""


def check_host_args(args: Any, *, training: bool = True, config: MemAgentConfig | None = None) -> None:
    """Refuse host flags that cannot work with the memory agent, at the first call, before any request."""
    _check_rewards(args)
    if getattr(args, "apply_chat_template", False):
        raise HostConfigError(
            "--apply-chat-template wraps the question in a chat template, but every turn builds its own chat "
            "from the raw question; drop --apply-chat-template"
        )
    if config is not None:
        _check_context_len(args, config)
    if training:
        _check_training(args)


def _check_rewards(args: Any) -> None:
    key, eval_key = getattr(args, "reward_key", None), getattr(args, "eval_reward_key", None)
    if key in RESERVED_KEYS:
        raise HostConfigError(
            f"--reward-key {key} names one of the reward's own fields {list(RESERVED_KEYS)}: training would read "
            "that field instead of the strict reward; use another key, such as --reward-key score"
        )
    if eval_key and not key:
        raise HostConfigError(
            f"--eval-reward-key {eval_key} without --reward-key: the host's rollout metrics read the same "
            "rewards as numbers; pass --reward-key too (for example --reward-key score)"
        )
    if eval_key == CATEGORY_FIELD:
        raise HostConfigError(f"--eval-reward-key {CATEGORY_FIELD} is a text label, not a score; use sub_em, em or f1")
    category = getattr(args, "log_reward_category", None)
    if category is not None and (not key or category != CATEGORY_FIELD):
        raise HostConfigError(
            f"--log-reward-category {category}: our reward dicts (with --reward-key set) carry the category "
            f"field '{CATEGORY_FIELD}'; use --reward-key score --log-reward-category {CATEGORY_FIELD}"
        )


def _turn_budgets(config: MemAgentConfig) -> list[tuple[int, str, str]]:
    """(tokens, the turn and its formula, what to lower) for the longest memory turn and final turn.

    A memory turn's context holds the chunk, the memory it reads and the memory it writes (at most
    MEM_MAX_MEMORY each), and in ReMemR1 mode the recalled memory too; the final turn holds the
    memory (and the recalled one) and the answer.
    """
    memories = 3 if config.mode is AgentMode.REMEMR1 else 2
    read = memories - 1  # memories in the final turn's prompt
    memory_turn = config.chunk_tokens + memories * config.max_memory_tokens + PROMPT_ALLOWANCE_TOKENS
    final_turn = read * config.max_memory_tokens + config.max_final_tokens + PROMPT_ALLOWANCE_TOKENS
    allowance = f"~{PROMPT_ALLOWANCE_TOKENS} prompt tokens"
    return [
        (
            memory_turn,
            f"a memory turn (MEM_CHUNK_TOKENS {config.chunk_tokens} + {memories} x MEM_MAX_MEMORY "
            f"{config.max_memory_tokens} + {allowance} = {memory_turn})",
            "MEM_CHUNK_TOKENS / MEM_MAX_MEMORY",
        ),
        (
            final_turn,
            f"the final turn ({read} x MEM_MAX_MEMORY {config.max_memory_tokens} + MEM_MAX_FINAL "
            f"{config.max_final_tokens} + {allowance} = {final_turn})",
            "MEM_MAX_MEMORY / MEM_MAX_FINAL",
        ),
    ]


def _check_context_len(args: Any, config: MemAgentConfig) -> None:
    limit = getattr(args, "rollout_max_context_len", None)
    if not limit:
        return
    needed, turn, settings = max(_turn_budgets(config))
    if int(limit) < needed:
        raise HostConfigError(f"--rollout-max-context-len {limit} is shorter than {turn}; raise it or lower {settings}")


_TRAINING_REFUSALS: tuple[tuple[str, str], ...] = (
    (
        "partial_rollout",
        "--partial-rollout re-queues half-finished groups, and a group of Multi-Conv output holds lists of "
        "turn samples the host cannot resume; train without --partial-rollout",
    ),
    ("group_rm", "--group-rm scores a group of samples, not of turn lists; train without --group-rm"),
    (
        "log_passrate",
        "--log-passrate reshapes the rows into rollout_batch_size x n, a fan-out has more rows; drop --log-passrate",
    ),
    (
        "rollout_sample_filter_path",
        "--rollout-sample-filter-path receives groups of turn lists and would drop single turns of a trajectory "
        "(trained whole or not at all); drop it, or filter groups with --dynamic-sampling-filter-path "
        f"{OUR_FILTERS[0]}",
    ),
    (
        "rollout_all_samples_process_path",
        "--rollout-all-samples-process-path receives groups of turn lists, not of samples; drop it",
    ),
    (
        "use_dynamic_global_batch_size",
        "--use-dynamic-global-batch-size sizes optimizer steps in turn rows and can split a trajectory across "
        "steps; drop it and set --global-batch-size in trajectories (slime HEAD and current vime count rollouts)",
    ),
)


def _check_training(args: Any) -> None:
    for flag, reason in _TRAINING_REFUSALS:
        if getattr(args, flag, None):
            raise HostConfigError(reason)
    top_p = getattr(args, "rollout_top_p", 1.0)
    if top_p is not None and float(top_p) != 1.0:
        raise HostConfigError(
            f"--rollout-top-p {top_p}: the trainer then replays per-token top-p sets that these hooks do not "
            "collect; train with --rollout-top-p 1.0 (MemAgent's recipe; evaluation may use any top_p)"
        )
    dynamic_filter = getattr(args, "dynamic_sampling_filter_path", None)
    if dynamic_filter is not None and dynamic_filter not in OUR_FILTERS:
        raise HostConfigError(
            f"--dynamic-sampling-filter-path {dynamic_filter} reads one reward per group member, but a member is a "
            f"trajectory's list of turn samples; use {OUR_FILTERS[0]} (DAPO's rule, counted per trajectory)"
        )
