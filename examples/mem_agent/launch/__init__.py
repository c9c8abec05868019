"""What the shell scripts call: each script's settings, declared once and checked at once, and the
orchestration of what they start (servers, the Ray head, the run-folder lock, stopping it all).

A script (`examples/mem_agent/*.sh`) keeps its flag arrays and its launch, so that it reads like
slime's; everything that decides is here. `python -m mem_agent.launch <script> ...` reads the
script's settings from the environment, reports every problem in one message (exit 2), and prints
the resolved values as shell assignments that the script evaluates.
"""
