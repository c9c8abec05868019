"""`--rollout-sample-hook-path`: hooks applied to every Sample leaf, the list shape kept.

Mirrors slime/rollout/sample_hooks.py:17-50 (624b824; vime/rollout/sample_hooks.py alike): each
hook, in order, is called as `hook(args, sample, **kwargs)` with only the keyword arguments its
signature accepts (`rollout_id`, `evaluation`), may be sync or async, and may return a Sample
(which replaces the leaf) or None; anything else is a TypeError naming the hook. Lists are
walked recursively, so a fan-out's turn samples each pass through every hook.
"""

from __future__ import annotations

import inspect
from typing import Any

from support.host.loader import load_function
from support.host.sample import Sample


def _accepted(function: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    parameters = inspect.signature(function).parameters.values()
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return kwargs
    names = {parameter.name for parameter in parameters}
    return {key: value for key, value in kwargs.items() if key in names}


async def apply_rollout_sample_hooks(args: Any, value: Any, *, rollout_id: int | None = None, **kwargs: Any) -> Any:
    paths = getattr(args, "rollout_sample_hook_path", None) or []
    if not paths:
        return value
    kwargs["rollout_id"] = rollout_id
    if isinstance(value, list):
        return [await apply_rollout_sample_hooks(args, item, **kwargs) for item in value]
    if not isinstance(value, Sample):
        raise TypeError(f"Rollout sample hooks expected Sample or list, got {type(value).__name__}.")
    for path in paths:
        hook = load_function(path)
        result = hook(args, value, **_accepted(hook, kwargs))
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            if not isinstance(result, Sample):
                kind = type(result).__name__
                raise TypeError(f"Rollout sample hook {path!r} returned {kind}, expected Sample or None.")
            value = result
    return value
