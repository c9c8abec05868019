"""`load_function` (slime/utils/misc.py:39-47): a dotted `pkg.module.attr` path, split at the last dot."""

from __future__ import annotations

import importlib
from typing import Any


def load_function(path: str) -> Any:
    module_path, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_path), attr)
