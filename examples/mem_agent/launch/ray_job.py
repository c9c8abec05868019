"""The live part of a training launch: its `ray start --head` and `ray job submit`, run in order.

run-qwen3-4b-train.sh execs the launch (launch/train.py), which calls `run_job`, so this process is
the script. Both commands run in sessions of their own under tethers to it
(serving/processes.start_process): stopping it (Ctrl-C, SIGTERM, SIGKILL) stops the head it started,
its GCS, raylet, dashboard and workers, which all stay in the head's session, and nothing else of
Ray (`ray stop` would kill every Ray of the node, other users' included). With keep_head the head
starts in a session of its own without a tether: it outlives the launch. The head starts from
head_dir: the workers of a job without a working_dir run in the folder their raylet was started
from, and the trainers' scripts rely on that.

The job is submitted once a GET of the head's /api/version answers (what Ray's own job client
checks). A fresh head answers a little before its node's agent can take a job ("No available
agent"), so a submission that never created the job (GET /api/jobs/ID is not found) is tried
again until start_timeout; one whose job ran and failed is not. Why `ray job submit` and not
Ray's JobSubmissionClient: docs/architecture.md, "Hand-written, and why".
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.usage import UsageError
from mem_agent.launch.serving import Group
from mem_agent.serving.processes import ManagedProcess, ServerStartError, answers, start_process, wait_healthy

API_POLL_S = 0.5  # between two asks whether the head's job API answers
RETRY_S = 5.0  # between two submissions the job API could not take yet
HEAD_LOG = "ray_head.log"  # under the save folder


class LaunchFailed(Exception):
    """The head or the job could not be started, or the job failed; one line for a person, exit status 1."""


class Stopped(Exception):
    """A signal asked this launch to stop; the exit status is 128 + its number."""

    def __init__(self, number: int) -> None:
        super().__init__(f"signal {number}")
        self.status = 128 + number


def _raise_stopped(number: int, frame: object) -> None:
    raise Stopped(number)


_HANDLERS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: _raise_stopped, signal.SIGHUP: _raise_stopped}


def job_api_answers(address: str, timeout_s: float = 10.0) -> bool:
    """Whether a Ray job API answers at `address`."""
    return answers(f"{address}/api/version", timeout_s)


def submit(group: Group, job: Sequence[str], address: str, submission_id: str, timeout_s: float) -> None:
    """`job` (ray job submit ...) until it succeeds; again only while the job was never created."""
    deadline = time.monotonic() + timeout_s
    while group.run("ray job submit", job):
        if answers(f"{address}/api/jobs/{submission_id}"):
            raise LaunchFailed(f"job {submission_id} failed; its log: ray job logs --address {address} {submission_id}")
        if time.monotonic() > deadline:
            raise LaunchFailed(f"could not submit the job to {address} within {timeout_s:.0f} s")
        print(f"the Ray job API cannot take the job yet; submitting again in {RETRY_S:.0f} s", file=sys.stderr)
        time.sleep(RETRY_S)


def run_job(
    head: Sequence[str],
    job: Sequence[str],
    *,
    address: str,
    submission_id: str,
    save_path: Path,
    head_dir: Path,
    keep_head: bool,
    start_timeout: float,
    stop_timeout: float,
) -> int:
    """Start `head` (none: submit to a running cluster), submit `job` once its job API answers, and stop
    the head unless `keep_head`; the exit status (1 a failure, 2 a linked log, 128 + N on signal N)."""
    previous = {stop: signal.signal(stop, handler) for stop, handler in _HANDLERS.items()}
    group, started = Group(stop_timeout), None
    try:
        if head:
            log = Path(save_path) / HEAD_LOG
            if keep_head:
                started = start_process("ray head", head, log, cwd=head_dir, tethered=False)
            else:
                started = group.start("ray head", head, log, cwd=head_dir)
            print(f"starting the Ray head (session {started.pid}, log {log})", file=sys.stderr)
            waited = _wait_for_job_api(started, address, start_timeout)
            print(f"Ray head up after {waited:.0f} s (jobs: {address})", file=sys.stderr)
        submit(group, job, address, submission_id, start_timeout)
        print(f"training finished; checkpoints in {save_path} (convert them with convert-to-hf.sh)", file=sys.stderr)
        return 0
    except LaunchFailed as error:
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
        for stop in _HANDLERS:
            signal.signal(stop, signal.SIG_IGN)  # the stop below is not to be cut short
        _stop(group, started, keep_head)
        for stop, handler in previous.items():
            signal.signal(stop, handler)


def _wait_for_job_api(head: ManagedProcess, address: str, timeout_s: float) -> float:
    try:
        return wait_healthy(head, f"{address}/api/version", timeout_s, API_POLL_S)
    except ServerStartError as error:
        raise LaunchFailed(f"{error}\n(Ray's job API needs ray[default])") from None


def _stop(group: Group, head: ManagedProcess | None, keep_head: bool) -> None:
    if head is not None and keep_head:
        print(f"leaving the Ray head running (KEEP_RAY=1); stop it with: kill -TERM -- -{head.pid}", file=sys.stderr)
    elif head is not None:
        print(f"stopping the Ray head this launch started (session {head.pid})", file=sys.stderr)
    group.stop()
