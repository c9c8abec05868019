"""The live part of a training launch: its `ray start --head` and `ray job submit`, run in order
(docs/training.md tells how it starts, retries and stops them; docs/architecture.md why `ray job
submit` and not Ray's JobSubmissionClient). The head starts from TRAINER_ROOT: the workers of a job
without a working_dir run in the folder their raylet started from, and the trainers rely on that.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.usage import UsageError
from mem_agent.launch.train_settings import TrainSettings
from mem_agent.serving.processes import Group, ServerStartError, answers, start_process, stopped_together, wait_healthy

API_POLL_S = 0.5  # between two asks whether the head's job API answers
RETRY_S = 5.0  # between two submissions the job API could not take yet


class LaunchFailed(Exception):
    """The head or the job could not be started, or the job failed; one line for a person, exit status 1."""


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


def run_job(head: Sequence[str], job: Sequence[str], settings: TrainSettings, address: str, submission_id: str) -> int:
    """Start `head` (none: submit to a running cluster), submit `job` once its job API answers, and stop
    the head unless KEEP_RAY=1; the exit status (1 a failure, 2 a linked log). Signal N exits with 128 + N."""
    save_path, started = Path(settings.save_path), None
    with stopped_together(Group(settings.ray_stop_timeout)) as group:
        try:
            if head:
                log, cwd = save_path / "ray_head.log", Path(settings.trainer_root)
                if settings.keep_ray:  # untethered: it outlives the launch
                    started = start_process("ray head", head, log, cwd=cwd, tethered=False)
                else:
                    started = group.start("ray head", head, log, cwd=cwd)
                print(f"starting the Ray head (session {started.pid}, log {log})", file=sys.stderr)
                try:
                    waited = wait_healthy(started, f"{address}/api/version", settings.ray_start_timeout, API_POLL_S)
                except ServerStartError as error:
                    raise LaunchFailed(f"{error}\n(Ray's job API needs ray[default])") from None
                print(f"Ray head up after {waited:.0f} s (jobs: {address})", file=sys.stderr)
            submit(group, job, address, submission_id, settings.ray_start_timeout)
            print(
                f"training finished; checkpoints in {save_path} (convert them with convert-to-hf.sh)", file=sys.stderr
            )
            return 0
        except (LaunchFailed, UsageError) as error:  # UsageError: the head's log is a link, a FIFO, a hard link
            print(f"error: {error}", file=sys.stderr)
            return 2 if isinstance(error, UsageError) else 1
        finally:
            if started is not None:
                kept = f"leaving the Ray head running (KEEP_RAY=1); stop it with: kill -TERM -- -{started.pid}"
                stopping = f"stopping the Ray head this launch started (session {started.pid})"
                print(kept if settings.keep_ray else stopping, file=sys.stderr)
