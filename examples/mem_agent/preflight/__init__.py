"""Layer 8: the preflight (`python -m mem_agent.check_host`): one rollout step of our hooks through a
user's slime or vime checkout, as its train.py runs it, on a machine without GPUs (docs/training.md).

run (this process: the options, a server, the launch's recipe, the verdict) starts child (train.py
imported and the step run in a child process, the import under a time bound) over host_args (the
host's parser, Megatron's and the engine's stood in), stand_ins (Ray, missing modules, the engine
start-up) and checks (one-line failures at a checkout line, the silent breaks).
"""
