"""The name a server serves its model under, asked once before a run so that the run can record it.

An evaluation started with only a URL knows no model: `--model` is optional because vLLM answers
a request without one with its only model. OpenAI-compatible servers (vLLM, SGLang) list what they
serve at `/v1/models`; a server that does not (vime's router, a proxy) leaves the name unknown,
which a run records as such rather than failing: the name is a fact about the run, not something
the run needs.
"""

from __future__ import annotations

import http.client
import json
import urllib.request

from mem_agent.inference.client import ClientSettings

MODELS_ROUTE = "/v1/models"
_MAX_BYTES = 1 << 20  # a listing of a few models; a larger body is not the listing asked for


def served_model_name(server: ClientSettings) -> str | None:
    """The id of the server's one model at `/v1/models`; None where it lists none or several (the
    name is then `--model`'s to give), has no such route, or does not answer in the connect timeout.
    No proxy, as for every request to a server (inference/client.py)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(server.base_url.rstrip("/") + MODELS_ROUTE, timeout=server.connect_timeout_s) as response:
            listing = json.loads(response.read(_MAX_BYTES))
    except (OSError, http.client.HTTPException, ValueError):  # refused, timed out, an error status, not JSON
        return None
    models = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(models, list) or len(models) != 1 or not isinstance(models[0], dict):
        return None
    name = models[0].get("id")
    return name if isinstance(name, str) and name else None
