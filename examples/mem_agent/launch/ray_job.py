"""The live part of a training launch: the script's `ray start --head` and `ray job submit`, run in order.

    python -m mem_agent.launch ray-job --address URL --submission-id ID --save-path DIR --head-dir DIR
        --keep-head 0|1 --start-timeout S --stop-timeout S -- [ray start --head ...] -- ray job submit ...

run-qwen3-4b-train.sh builds both commands and execs this, so this process is the script: stopping
it (Ctrl-C, SIGTERM, SIGKILL) stops the head it started (launch/ray_head.py) unless --keep-head 1.
The job is submitted once the head's job API answers. A fresh head answers a little before its
node's agent can take a job ("No available agent"), so a submission that never created the job is
tried again until --start-timeout; one whose job ran and failed is not.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from mem_agent.common.console import command_parser
from mem_agent.common.numbers import number, parse_switch
from mem_agent.common.usage import UsageError, split_command
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


def launch(options: argparse.Namespace, head_argv: list[str], job_argv: list[str]) -> None:
    head = None
    try:
        if head_argv:
            log_path = Path(options.save_path) / HEAD_LOG
            head = start_head(
                head_argv,
                log_path=log_path,
                cwd=options.head_dir,
                grace_s=options.stop_timeout,
                kept=bool(options.keep_head),
            )
            print(f"starting the Ray head (session {head.session}, log {log_path})", file=sys.stderr)
            waited = wait_for_job_api(head, options.address, options.start_timeout)
            print(f"Ray head up after {waited:.0f} s (jobs: {options.address})", file=sys.stderr)
        submit(job_argv, options.address, options.submission_id, options.start_timeout)
        print(
            f"training finished; checkpoints in {options.save_path} (convert them with convert-to-hf.sh)",
            file=sys.stderr,
        )
    finally:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)  # the stop below is not to be cut short
        if head is not None:
            head.stop()


def _raise_stopped(number: int, frame: object) -> None:
    raise Stopped(number)


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.launch.ray_job", prog="python -m mem_agent.launch ray-job")
    parser.add_argument("--address", required=True, help="the Ray job API's URL")
    parser.add_argument("--submission-id", required=True, help="the job's id")
    parser.add_argument("--save-path", type=Path, required=True, help="the run's save folder (the head's log)")
    parser.add_argument("--head-dir", type=Path, required=True, help="the folder the head is started from")
    parser.add_argument("--keep-head", type=parse_switch, required=True, help="1: leave the head running (0 or 1)")
    parser.add_argument(
        "--start-timeout", type=number(0, above=True), required=True, help="seconds for the job API to answer"
    )
    parser.add_argument("--stop-timeout", type=number(0), required=True, help="seconds from SIGTERM to SIGKILL")
    return parser


def main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    options, rest = split_command(list(argv))
    args = build_parser().parse_args(options)
    head_argv, job_argv = split_command(rest)
    if not job_argv:
        print("error: give the head's command (or nothing) and the job's, each after --", file=sys.stderr)
        return 2
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _raise_stopped)
    try:
        launch(args, head_argv, job_argv)
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
    return 0
