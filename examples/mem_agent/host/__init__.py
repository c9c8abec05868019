"""What talks to the trainers, slime and vime: their flags (checked or refused), per-process hook
settings, the clients to their routers, one training row per turn with the trajectory's advantage,
rewards in the host's dict layout, and the stand-ins and namespaces the preflight builds.
"""
