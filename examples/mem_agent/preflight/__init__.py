"""Layer 8: the preflight (`python -m mem_agent.check_host`, docs/training.md): pipeline (options,
server, launch, verdict) runs child (train.py's rollout step in a child process, its import under a
time bound) over host_args (the host's parser), stand_ins (Ray, missing modules, the engine
start-up) and checks (failures, silent breaks).
"""
