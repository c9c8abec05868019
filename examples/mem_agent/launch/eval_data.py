"""Check which RULER-HQA eval files DATA_ROOT holds, and fetch or build the missing ones.

`mem-agent prepare-eval-data [--download | --build-from RAW.json]` (prepare-eval-data.sh runs it).
Every setting is checked first (all problems in one message, exit 2). Then each eval_<N>.json of
LENGTH is checked by the evaluator's own checker (evaluation/files.check_eval_file, streamed: an
eval_6400.json is ~450 MB); the missing ones are downloaded from MemAgent's dataset on the Hub
or built with mem_agent.build_long_context; a table gives each length's status. Exit status: 0
every length ready, 1 some not, 2 a usage error. A file that exists is never overwritten or
deleted, valid or not.

huggingface_hub downloads each file (data/row_sources.hub_file: its retries, resumption, progress
bar, and its rule that the token goes to the Hub's own hosts only, never to a storage host it
redirects to), into a temporary folder of its own in DATA_ROOT (.eval_<N>.json.XXXX.download),
not into its cache: the file is a rename away from its place on the same file system, never a
450 MB copy out of HF_HOME, and no second copy stays in a cache that is often a small home folder.
Only once the checker passed it is it given its name (common/guarded_files.place_file: never
through a link, never over a file); the folder is removed either way.

Lengths above 10,000 documents are index-layout files (data/index_files.py): they need the
HotpotQA dev corpus at DATA_ROOT/hotpotqa_dev.json, where MemAgent's scripts keep it. --download
fetches it first (CORPUS_URL, kept only when its sha256 is CORPUS_SHA256: common/pinned_fetch.py);
--build-from RAW builds those lengths with RAW as the corpus and copies RAW there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from mem_agent.common.guarded_files import atomic_output, open_regular, place_file
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.numbers import SEED_LIMIT
from mem_agent.common.pinned_fetch import FetchError, fetch
from mem_agent.common.printable import printable, shell_line
from mem_agent.common.usage import UsageError
from mem_agent.data.hotpot_corpus import CORPUS_NAME
from mem_agent.data.index_files import INDEX_LAYOUT_ABOVE
from mem_agent.data.row_sources import HUB_ANSWER_S, HubFile, hub_file
from mem_agent.evaluation.files import check_eval_file, file_sha256
from mem_agent.evaluation.request import PAPER_HQA_LENGTHS
from mem_agent.launch.eval_settings import DocumentCounts
from mem_agent.launch.problems import Problems
from mem_agent.launch.script_settings import Command, read
from mem_agent.settings.declared import ENV_MODEL_CONFIG, Switch, setting

# The dev file MemAgent's download_qa_dataset.sh fetches, and its sha256 as a published download
# script lists it (not yet checked against a download here: CORPUS_SHA256="" skips the check).
HOTPOTQA_DEV_URL = "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"
HOTPOTQA_DEV_SHA256 = "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea"
CORPUS_DEADLINE_S = 3600.0  # the whole fetch, retries included: its ~47 MB need 13 KB/s to make it
HUB, BUILD = "--download: MemAgent's eval files from the Hugging Face Hub", "--build-from RAW.json: built here"
READY = ("present", "downloaded", "built")


class PrepareSettings(BaseModel):
    model_config = ENV_MODEL_CONFIG

    data_root: str = setting(
        "data/ruler_hqa", "Folder of eval_<N>.json files (as run-eval.sh's).", env="DATA_ROOT", values="a folder"
    )
    length: DocumentCounts = setting(
        PAPER_HQA_LENGTHS,
        "Document counts N to check (run-eval.sh's LENGTH).",
        env="LENGTH",
        values='distinct positive integers, such as "50 200"',
    )
    lengths: DocumentCounts = setting(
        "",
        "Another spelling of LENGTH (the vime example's README); both set must agree.",
        env="LENGTHS",
        values='distinct positive integers, such as "50 200"',
    )
    download: Switch = setting(False, "Fetch the missing files.", env="DOWNLOAD", section=HUB)
    hf_endpoint: str = setting("https://huggingface.co", "The Hub.", env="HF_ENDPOINT", section=HUB)
    hf_repo: str = setting(
        "BytedTsinghua-SIA/hotpotqa",
        "The dataset: HF_ENDPOINT/datasets/HF_REPO/resolve/HF_REVISION/eval_<N>.json.",
        env="HF_REPO",
        section=HUB,
    )
    hf_revision: str = setting("main", "Its branch, tag or commit.", env="HF_REVISION", section=HUB)
    hub_timeout: float = setting(
        HUB_ANSWER_S,
        "Seconds the Hub's first answer about each file is awaited.",
        env="HUB_TIMEOUT",
        section=HUB,
        gt=0,
        le=3600,
    )
    corpus_url: str = setting(
        HOTPOTQA_DEV_URL,
        f"The HotpotQA dev file, fetched to DATA_ROOT/{CORPUS_NAME} when a length above 10,000 needs it.",
        env="CORPUS_URL",
        section=HUB,
    )
    corpus_sha256: str = setting(
        HOTPOTQA_DEV_SHA256,
        "Its sha256, checked before the file is kept (empty: not checked).",
        env="CORPUS_SHA256",
        section=HUB,
        pattern=r"^([0-9a-f]{64})?$",
    )
    build_from: str = setting(
        "",
        "Raw HotpotQA / 2WikiMultiHopQA rows to build the missing files from.",
        env="BUILD_FROM",
        values="a file",
        section=BUILD,
    )
    num_questions: int = setting(128, "Questions per built file.", env="NUM_QUESTIONS", section=BUILD, ge=1)
    seed: int = setting(42, "Shuffle seed of the builder.", env="SEED", section=BUILD, ge=0, le=SEED_LIMIT)
    dry_run: Switch = setting(
        False, "Print what would be fetched or built; fetch and build nothing.", env="DRY_RUN", section="Other"
    )


COMMAND = Command(
    "mem_agent.launch.eval_data",
    PrepareSettings,
    "prepare-eval-data.sh",
    "Checks which eval_<N>.json of LENGTH are in DATA_ROOT (each read in full by the evaluator's checker)"
    " and fetches (--download) or builds (--build-from) the missing ones; a table gives each length's status"
    " (present, missing, downloaded, built, invalid, download failed, build failed), item count and size."
    " Exit status: 0 every length ready, 1 some not, 2 a usage error. A file that exists is never"
    " overwritten or deleted; a download is renamed into place only once it passed the check.",
    "Each file must be a JSON array of objects with context, input and answers. HF_TOKEN is read from the"
    " environment only and sent as an Authorization header to the Hub's host only; it is never printed."
    " PYTHON: the interpreter with mem-agent installed (default: the checkout's .venv, else python3).",
)


@dataclass
class Status:
    state: str  # present, missing, downloaded, built, invalid, download failed, build failed
    items: int | None = None
    reason: str = ""


def plan(environ: Mapping[str, str], problems: Problems) -> PrepareSettings:
    settings = read(PrepareSettings, environ, problems)
    problems.dry_run = settings.dry_run
    if not settings.download:
        problems.unused(
            ["HF_REPO", "HF_REVISION", "HUB_TIMEOUT", "CORPUS_URL", "CORPUS_SHA256"],
            environ,
            "they choose what --download fetches",
        )
    if not settings.build_from:
        problems.unused(["NUM_QUESTIONS", "SEED"], environ, "they shape what --build-from builds")
    if settings.download and settings.build_from:
        problems.problem("choose one of --download and --build-from")
    if settings.lengths and environ.get("LENGTH", "").strip() and settings.lengths != settings.length:
        differ = f"LENGTH='{environ['LENGTH']}' and LENGTHS='{environ['LENGTHS']}' differ"
        problems.problem(f"{differ}: set one of them (LENGTHS is another spelling of LENGTH)")
    if settings.build_from and not Path(settings.build_from).is_file():
        problems.missing(f"--build-from {settings.build_from}: file not found")
    existing = Path(settings.data_root)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        problems.problem(f"DATA_ROOT={settings.data_root}: {existing} is a file, not a folder")
    elif (settings.download or settings.build_from) and not os.access(existing, os.W_OK):
        problems.missing(f"DATA_ROOT={settings.data_root}: cannot write in {existing}")
    return settings


def prepare(settings: PrepareSettings, lengths: Sequence[str], environ: Mapping[str, str]) -> dict[str, Status]:
    root = Path(settings.data_root)
    indexed = [n for n in lengths if int(n) > INDEX_LAYOUT_ABOVE]
    corpus_problem = ""
    if indexed and settings.download and not (root / CORPUS_NAME).exists():
        corpus_problem = _download_corpus(root, settings.corpus_url, settings.corpus_sha256, settings.dry_run)
    elif indexed and settings.build_from:
        corpus_problem = _copy_corpus(Path(settings.build_from), root / CORPUS_NAME, settings.dry_run)
    status = {n: _checked(root / f"eval_{n}.json") for n in lengths}
    absent = [n for n in lengths if status[n].state == "missing"]
    if corpus_problem:
        for n in set(indexed) & set(absent):
            status[n] = Status("download failed" if settings.download else "build failed", reason=corpus_problem)
        absent = [n for n in absent if n not in indexed]
    if absent and settings.download:
        for n in absent:
            status[n] = _download(settings, n, environ.get("HF_TOKEN", "").strip() or None)
    elif absent and settings.build_from:
        status |= _build(settings, absent)
    return status


def _checked(path: Path, ready: str = "present", failed: str = "invalid", corpus: Path | None = None) -> Status:
    if not path.exists():
        return Status("missing")
    try:
        return Status(ready, len(check_eval_file(path, corpus)))
    except DataFormatError as error:
        return Status(failed, reason=str(error))


def _download(settings: PrepareSettings, n: str, token: str | None) -> Status:
    name, root = f"eval_{n}.json", Path(settings.data_root)
    url = f"{settings.hf_endpoint.rstrip('/')}/datasets/{settings.hf_repo}/resolve/{settings.hf_revision}/{name}"
    print(printable(f"{name}: downloading from {settings.hf_endpoint} ({settings.hf_repo})"), flush=True)
    if settings.dry_run:
        print(printable(f"  GET {url} -> {root / name}"))
        if token:
            print("  HF_TOKEN=<set>: sent as an Authorization header, to the Hub's host only")
        return Status("missing")
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".download", dir=root))
    try:
        file = HubFile(settings.hf_repo, name, settings.hf_revision, settings.hf_endpoint, token or False, folder)
        fetched, _ = hub_file(file, settings.hub_timeout, "HUB_TIMEOUT")
        outcome = _checked(fetched, "downloaded", "download failed", root / CORPUS_NAME)
        if outcome.state != "downloaded":
            outcome.reason = (
                f"the downloaded file is not a valid eval file: {outcome.reason.removeprefix(f'{fetched}: ')}"
            )
            return outcome
        place_file(fetched, root / name)
        return outcome
    except DataFormatError as error:
        return Status("download failed", reason=str(error))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _download_corpus(root: Path, url: str, sha256: str, dry_run: bool) -> str:
    """root/hotpotqa_dev.json fetched and its sha256 checked (empty: not checked); the problem, or ""
    once it is there. A file that fails the check is never kept."""
    print(printable(f"{CORPUS_NAME}: downloading from {url}"), flush=True)
    if dry_run:
        print(printable(f"  GET {url} -> {root / CORPUS_NAME}"))
        return ""
    try:
        with atomic_output(root / CORPUS_NAME, "wb") as out:
            fetch(url, out, sha256=sha256, deadline_s=CORPUS_DEADLINE_S)
    except FetchError as error:
        return f"{CORPUS_NAME}: {error} (CORPUS_URL, CORPUS_SHA256)"
    return ""


def _copy_corpus(source: Path, target: Path, dry_run: bool) -> str:
    """The raw file the index files are built from, where the evaluator looks for their corpus."""
    if target.exists():
        same = target.resolve() == source.resolve() or file_sha256(target) == file_sha256(source)
        return "" if same else f"{target} exists and is not --build-from {source}: move it aside"
    if dry_run:
        print(shell_line(["cp", source, target]))
        return ""
    with open_regular(source) as read, atomic_output(target, "wb") as out:
        shutil.copyfileobj(read, out)
    return ""


def _build(settings: PrepareSettings, absent: list[str]) -> dict[str, Status]:
    root = Path(settings.data_root)
    command = [
        sys.executable,
        "-m",
        "mem_agent.build_long_context",
        "--input",
        settings.build_from,
        "--num-docs",
        *absent,
    ]
    command += ["--num-questions", str(settings.num_questions), "--seed", str(settings.seed), "--out-dir", str(root)]
    if settings.dry_run:
        print(shell_line(command))
        return {}
    root.mkdir(parents=True, exist_ok=True)
    if subprocess.run(command, check=False).returncode != 0:
        return {n: Status("build failed") for n in absent}
    return {n: _checked(root / f"eval_{n}.json", "built", "build failed") for n in absent}


def print_table(root: Path, status: dict[str, Status]) -> int:
    """The table on stdout, the reasons on stderr; how many lengths are not ready."""
    row = "{:>8} | {:<15} | {:>6} | {:>8} | {}"
    print(row.format("length", "status", "items", "size", "file"))
    for n, entry in status.items():
        path = root / f"eval_{n}.json"
        size = _human(path.stat().st_size) if path.is_file() else "-"
        print(printable(row.format(n, entry.state, "-" if entry.items is None else entry.items, size, path)))
    for n, entry in status.items():
        if entry.reason:
            print(printable(f"eval_{n}.json: {entry.reason}"), file=sys.stderr)
    not_ready = sum(entry.state not in READY for entry in status.values())
    if not_ready:
        advice = "Missing files: --download (Hub access) or --build-from RAW.json."
        print(f"{not_ready} length(s) not ready. {advice}", file=sys.stderr)
        print("An invalid file is left as it is: move it aside, then run this again.", file=sys.stderr)
    return not_ready


def _human(size: float) -> str:
    """Bytes the way `numfmt --to=iec --suffix=B` writes them: 512B, 1.5KB, 450MB."""
    units = ["", "K", "M", "G", "T"]
    while size >= 1024 and len(units) > 1:
        size /= 1024
        units.pop(0)
    return f"{size:.1f}{units[0]}B" if units[0] and size < 10 else f"{size:.0f}{units[0]}B"


def _prepare(settings: PrepareSettings) -> int:
    try:
        status = prepare(settings, (settings.lengths or settings.length).split(), os.environ)
    except UsageError as error:  # a link, a FIFO or a hard link where a file is written
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 1 if print_table(Path(settings.data_root), status) else 0


def main(argv: Sequence[str] | None = None) -> int:
    return COMMAND.run(argv, os.environ, plan, _prepare)


if __name__ == "__main__":
    raise SystemExit(main())
