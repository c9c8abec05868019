"""Layer 8: the preflight (`python -m mem_agent.check_host`): one rollout step of our hooks through a
user's slime or vime checkout, as its train.py runs it, on a machine without GPUs (docs/training.md).

pipeline (the options, a server, the launch, the verdict) starts child (train.py's step in a child
process, its import under a time bound) over host_args (the host's parser, Megatron's and the
engine's stood in), stand_ins (Ray, missing modules, the engine start-up) and checks (failures).
"""
