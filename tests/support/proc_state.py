"""Whether a process still runs, read from /proc (Linux), for tests of what a stop leaves behind.

`os.kill(pid, 0)` also finds a zombie, which an orphan stays until init reaps it (inside a
container, init may never do so); a zombie has exited, only its status is left, so it counts as
gone, as in mem_agent.serving.processes.running_in.
"""

from __future__ import annotations

from pathlib import Path


def process_state(pid: int) -> str | None:
    """The process's state letter (R, S, D, Z, ...), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]  # the command name may hold ") "


def still_running(pid: int) -> bool:
    """True while the process exists and has not exited (a zombie has)."""
    return process_state(pid) not in (None, "Z", "X")
