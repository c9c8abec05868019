"""What runs inside the trainers, slime and vime, with our hooks: their flags (checked or refused),
per-process hook settings, the clients to their routers, one training row per turn with the
trajectory's advantage, and rewards in the host's dict layout. The preflight, which runs a
checkout's train.py from outside, is its own room (preflight/).
"""
