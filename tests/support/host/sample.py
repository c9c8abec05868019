"""The host's `Sample`: every field slime HEAD and current vime define, and what hooks may call.

Mirrors slime/utils/types.py:93-252 (624b824) and vime/utils/types.py (file index 2b83ea2):
field order and defaults, `Status`, `SpecInfo` / `PrefixCacheInfo` as objects with the
properties the rollout metrics read (types.py:154-220), `get_reward_value` (types.py:246) and
`effective_response_length` (types.py:250). vime adds the sampler top-k / top-p replay fields
(`rollout_topk_token_ids`, `rollout_topk_log_probs`, `rollout_top_p_log_probs`); they are here
too, so a hook that copies a Sample keeps them and a hook that sets an unknown field fails as
it would there (slots are not used upstream either, so that is only checked by our tests).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass
class SpecInfo:
    """Sample.SpecInfo (slime/utils/types.py:154-189): speculative-decoding counters."""

    spec_accept_token_num: int = 0
    spec_draft_token_num: int = 0
    spec_verify_ct: int = 0
    completion_token_num: int = 0

    @property
    def spec_accept_rate(self) -> float:
        return self.spec_accept_token_num / self.spec_draft_token_num if self.spec_draft_token_num else 0.0

    @property
    def spec_accept_length(self) -> float:
        return self.completion_token_num / self.spec_verify_ct if self.spec_verify_ct else 0.0


@dataclass
class PrefixCacheInfo:
    """Sample.PrefixCacheInfo (slime/utils/types.py:193-218): prefix-cache hits per sample."""

    cached_tokens: int = 0
    total_prompt_tokens: int = 0

    @property
    def prefix_cache_hit_rate(self) -> float:
        return self.cached_tokens / self.total_prompt_tokens if self.total_prompt_tokens else 0.0


class Status(Enum):
    PENDING = "pending"
    COMPLETED = "completed"
    TRUNCATED = "truncated"
    ABORTED = "aborted"
    FAILED = "failed"


@dataclass
class Sample:
    """slime.utils.types.Sample / vime.utils.types.Sample: every field, in upstream order."""

    group_index: int | None = None
    index: int | None = None
    rollout_id: int | None = None
    prompt: str | list[dict[str, str]] = ""
    tokens: list[int] = field(default_factory=list)
    multimodal_inputs: dict[str, Any] | None = None
    multimodal_train_inputs: dict[str, Any] | None = None
    multimodal_train_input_id: str | None = None
    apply_chat_template_kwargs: dict = field(default_factory=dict)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    weight_versions: list[str] = field(default_factory=list)
    rollout_log_probs: list[float] | None = None
    rollout_topk_token_ids: Any = None  # vime only
    rollout_topk_log_probs: Any = None  # vime only
    rollout_top_p_token_ids: list[int] | None = None
    rollout_top_p_token_offsets: list[int] | None = None
    rollout_top_p_log_probs: Any = None  # vime only
    rollout_routed_experts: Any = None
    remove_sample: bool = False
    teacher_log_probs: list[float] | None = None

    Status = Status

    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)
    generate_function_path: str | None = None
    custom_rm_path: str | None = None
    train_metadata: dict | None = None
    session_id: str | None = None
    non_generation_time: float = 0.0
    SpecInfo = SpecInfo
    spec_info: SpecInfo = field(default_factory=SpecInfo)
    PrefixCacheInfo = PrefixCacheInfo
    prefix_cache_info: PrefixCacheInfo = field(default_factory=PrefixCacheInfo)

    def get_reward_value(self, args: argparse.Namespace) -> Any:
        """types.py:246: the reward, or `reward[args.reward_key]` when the host reads a key."""
        return self.reward if not args.reward_key else self.reward[args.reward_key]

    @property
    def effective_response_length(self) -> int:
        return sum(self.loss_mask) if self.loss_mask is not None else self.response_length
