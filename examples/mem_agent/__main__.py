"""`python -m mem_agent <command>`: the `mem-agent` console command (mem_agent/cli.py) without the
installed script."""

from mem_agent.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
