"""Layer 8: the preflight (`python -m mem_agent.check_host`), one rollout step of our hooks through a
user's slime or vime checkout, the way its train.py runs it, on a machine without GPUs.

Nothing here runs inside the trainer: the training launch's plan and recipe, computed in-process
(launch), the host's own parser over them with Megatron's stood in (host_args), the stand-ins for
what needs a GPU (stand_ins: Ray, missing modules; engines: the engine's parser, start-up and
router), the step itself (step), the watch for silent breaks (checks), the child process that
imports train.py under a time bound (child), and the run that ties them together (run). Every
failure names the checkout file and line it came from (failures.where).
"""
