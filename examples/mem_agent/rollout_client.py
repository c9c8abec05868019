"""The router client, under the name the design and users' own code import it by.

Its home is mem_agent.inference.client (token ids in, token ids and logprobs out, over vime's
`/inference/v1/generate`, SGLang's `/generate` or OpenAI-compatible `/v1/completions`), beside the
scheduling and pooling it works with; this module names its public surface.
"""

from mem_agent.inference.client import ApiProtocol, ClientSettings, RolloutClient, build_body, parse_completion

__all__ = ["ApiProtocol", "ClientSettings", "RolloutClient", "build_body", "parse_completion"]
