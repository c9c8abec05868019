"""Plain blocking HTTP for tests that check the servers themselves, independent of our client."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post_json(url: str, body: dict[str, Any], timeout_s: float = 120.0) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with _OPENER.open(request, timeout=timeout_s) as response:
        return json.load(response)


def get_json(url: str, timeout_s: float = 30.0) -> dict[str, Any]:
    with _OPENER.open(url, timeout=timeout_s) as response:
        return json.load(response)
