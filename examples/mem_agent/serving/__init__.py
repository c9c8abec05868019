"""The local CPU serving stack the demo, tests and benchmarks share: vLLM's CPU build behind
vllm-router on loopback, the tiny Qwen3 it serves, and sessions stopped by their leaders' PIDs,
each tied to its starter by a tether (stopped with it, even when it is killed with SIGKILL); the
groups of sessions a launch starts and stops together, and whether a port is taken.
"""
