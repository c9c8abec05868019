"""What the shell scripts run: each script's settings, declared once and checked at once, and the
orchestration of what they start (servers, the Ray head, the run-folder lock, stopping it all).

A script (`examples/mem_agent/*.sh`) finds the interpreter and `exec`s one `mem-agent` command
(`run-eval`: evaluate.py, `convert-to-hf`: convert.py, `train`: train.py; `prepare-eval-data` is a
command of its own, prepare_eval_data.py) with its arguments: its settings are flags or environment
variables (settings/command.py), every problem is reported in one message (exit 2), and the job runs
in that same process.
"""
