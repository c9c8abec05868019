"""A separate process that holds a run folder's lock (common/run_folder.lock_run_folder), as a live
run does, for tests of what other commands do beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def holder_code(folder: Path, command: str = "holder", seconds: float = 600) -> str:
    """Python that takes `folder`'s lock under `command`, prints `held`, and keeps it `seconds`."""
    return (
        "import time; from mem_agent.common.run_folder import lock_run_folder\n"
        f"with lock_run_folder({str(folder)!r}, command={command!r}):\n"
        f"    print('held', flush=True); time.sleep({seconds!r})\n"
    )


def start_holder(folder: Path, command: str = "holder") -> subprocess.Popen[str]:
    """The process, returned once it holds `folder`'s lock under `command`; it holds it until killed."""
    holder = subprocess.Popen([sys.executable, "-c", holder_code(folder, command)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    if holder.stdout.readline() != "held\n":
        holder.kill()
        holder.wait()
        raise AssertionError(f"the holder of {folder} did not take the lock (exit status {holder.returncode})")
    return holder
