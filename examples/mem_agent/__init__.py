"""MemAgent and ReMemR1 long-context memory agents for the slime and vime RL trainers.

See README.md for the file map; the hook paths a trainer loads are `mem_agent.rollout.*` and
`mem_agent.custom_convert.*`.
"""

__version__ = "0.1.0"
