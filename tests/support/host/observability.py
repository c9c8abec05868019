"""The hosts' logger and step counter, as a custom log function finds them in the host process.

Mirrors slime/observability/logging_utils.py:45-51 (`log(args, metrics, step_key)`: W&B gets the
whole dict, TensorBoard every key but the step key at `metrics[step_key]`) and
metric_utils.py:120-123 (`compute_rollout_step`); vime's files are the same under `vime/`
(index a46845e for logging_utils). Instead of W&B or TensorBoard, `LOGGED` keeps each call, and a
value TensorBoard's `add_scalar` could not take is an error here as it is there.

In a host these modules are imported by rollout_metrics.py before it calls a custom log function
(slime rollout_metrics.py:7-14). `as_host_modules(backend)` puts them in `sys.modules` under the
host's names for the duration of such a call, and takes them out afterwards, so nothing else in
the test session (the preflight's checkout imports) sees a `slime` or `vime` package.
"""

from __future__ import annotations

import contextlib
import numbers
import sys
import types
from collections.abc import Iterator
from typing import Any

LOGGED: list[tuple[str, dict[str, Any]]] = []  # (step_key, metrics) of every log() call


def log(args: Any, metrics: dict[str, Any], step_key: str) -> None:
    step = metrics[step_key]  # TensorBoard reads the step from the dict (logging_utils.py:51)
    for key, value in metrics.items():
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{key}={value!r}: add_scalar takes numbers only")
    assert isinstance(step, int), f"{step_key} must be an int step, got {step!r}"
    LOGGED.append((step_key, dict(metrics)))


def compute_rollout_step(args: Any, rollout_id: int) -> int:
    if getattr(args, "wandb_always_use_train_step", False):
        return rollout_id * args.rollout_batch_size * args.n_samples_per_prompt // args.global_batch_size
    return rollout_id


@contextlib.contextmanager
def as_host_modules(backend: str) -> Iterator[None]:
    names = [backend, f"{backend}.observability"]
    modules = {name: types.ModuleType(name) for name in names}
    logging_utils = types.ModuleType(f"{backend}.observability.logging_utils")
    logging_utils.log = log  # type: ignore[attr-defined]
    metric_utils = types.ModuleType(f"{backend}.observability.metric_utils")
    metric_utils.compute_rollout_step = compute_rollout_step  # type: ignore[attr-defined]
    modules[logging_utils.__name__] = logging_utils
    modules[metric_utils.__name__] = metric_utils
    added = [name for name in modules if name not in sys.modules]
    for name in added:
        sys.modules[name] = modules[name]
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)
