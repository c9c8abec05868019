"""What talks to the trainers, slime and vime: their flags (checked or refused), per-process hook
settings, the clients to their routers, one training row per turn with the trajectory's advantage,
rewards in the host's dict layout, and the preflight's parts (preflight_*: the launch flags, the
host's parser, train.py's rollout step and the checks for silent breaks; stubs: its stand-ins).
"""
