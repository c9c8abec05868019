"""MemAgent and ReMemR1 long-context memory agents for the slime and vime RL trainers.

The top level holds the entry points only: the hooks a trainer loads (`mem_agent.rollout.*`,
`mem_agent.custom_convert.*`, `mem_agent.dynamic_filter.*`) and the commands users run
(`python -m mem_agent.<command>`). Everything they use lives in the rooms (subpackages), drawn as
layers in docs/architecture.md: a room imports only from lower layers, and nothing imports an
entry point.
"""

__version__ = "0.1.0"
