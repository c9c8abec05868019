"""The live part of a training launch: its `ray start --head` and `ray job submit`, run in order.

run-qwen3-4b-train.sh execs the launch (launch/train.py), which calls run_job, so this process is
the script: stopping it (Ctrl-C, SIGTERM, SIGKILL) stops the head it started (launch/ray_head.py)
unless keep_head.
The job is submitted once the head's job API answers. A fresh head answers a little before its
node's agent can take a job ("No available agent"), so a submission that never created the job is
tried again until start_timeout; one whose job ran and failed is not.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.usage import UsageError
from mem_agent.launch.ray_head import HeadStartError, RayHead, signal_on_parent_death, start_head
from mem_agent.serving.processes import log_tail

API_POLL_S = 2.0  # between two asks whether the head's job API answers
RETRY_S = 5.0  # between two submissions the job API could not take yet
HEAD_LOG = "ray_head.log"  # under the save folder


class LaunchFailed(Exception):
    """The head or the job could not be started; one line for a person, exit status 1."""


class Stopped(Exception):
    """A signal asked this launch to stop; the exit status is 128 + its number."""

    def __init__(self, number: int) -> None:
        super().__init__(f"signal {number}")
        self.status = 128 + number


def job_api_answers(address: str, timeout_s: float = 60.0) -> bool:
    """Whether a Ray job API answers at `address` (`ray job list` succeeds)."""
    try:
        listed = subprocess.run(
            ["ray", "job", "list", "--address", address], capture_output=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listed.returncode == 0


def wait_for_job_api(head: RayHead, address: str, timeout_s: float) -> float:
    """Seconds until the head's job API answered; LaunchFailed when the head exits or time runs out."""
    started = time.monotonic()
    while not job_api_answers(address):
        if not head.alive():
            raise LaunchFailed(f"ray start exited; see {head.log_path}:\n{log_tail(head.log_path, 20)}")
        if time.monotonic() - started > timeout_s:
            raise LaunchFailed(
                f"the Ray job API did not answer at {address} within {timeout_s:.0f} s (is ray[default]"
                f" installed?); see {head.log_path}"
            )
        time.sleep(API_POLL_S)
    return time.monotonic() - started


def submit(job: Sequence[str], address: str, submission_id: str, timeout_s: float) -> None:
    """`job` (ray job submit ...) until it succeeds; again only while the job was never created."""
    deadline = time.monotonic() + timeout_s
    while subprocess.run(list(job), check=False, preexec_fn=signal_on_parent_death(signal.SIGTERM)).returncode:
        status = ["ray", "job", "status", "--address", address, submission_id]
        if subprocess.run(status, capture_output=True, check=False).returncode == 0:
            raise LaunchFailed(f"job {submission_id} failed; its log: ray job logs --address {address} {submission_id}")
        if time.monotonic() > deadline:
            raise LaunchFailed(f"could not submit the job to {address} within {timeout_s:.0f} s")
        print(f"the Ray job API cannot take the job yet; submitting again in {RETRY_S:.0f} s", file=sys.stderr)
        time.sleep(RETRY_S)


def _raise_stopped(number: int, frame: object) -> None:
    raise Stopped(number)


def run_job(
    head: list[str],
    job: list[str],
    *,
    address: str,
    submission_id: str,
    save_path: Path,
    head_dir: Path,
    keep_head: bool,
    start_timeout: float,
    stop_timeout: float,
) -> int:
    """The head (none when `head` is empty), then the job; the exit status of the launch."""
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _raise_stopped)
    started = None
    try:
        if head:
            log_path = save_path / HEAD_LOG
            started = start_head(head, log_path=log_path, cwd=head_dir, grace_s=stop_timeout, kept=keep_head)
            print(f"starting the Ray head (session {started.session}, log {log_path})", file=sys.stderr)
            waited = wait_for_job_api(started, address, start_timeout)
            print(f"Ray head up after {waited:.0f} s (jobs: {address})", file=sys.stderr)
        submit(job, address, submission_id, start_timeout)
        print(f"training finished; checkpoints in {save_path} (convert them with convert-to-hf.sh)", file=sys.stderr)
    except (LaunchFailed, HeadStartError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except UsageError as error:  # the head's log is a link, a FIFO, a hard link
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Stopped as stopped:
        return stopped.status
    finally:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)  # the stop below is not to be cut short
        if started is not None:
            started.stop()
    return 0
