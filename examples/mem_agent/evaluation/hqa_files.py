"""RULER-HQA's eval files in DATA_ROOT: which are there and valid (each read in full by the evaluator's
checker), the missing ones fetched from the Hub (with the HotpotQA corpus the index-layout files need)
or built from raw rows, and the status table. A file that exists is never overwritten or deleted; a
download is renamed into place only once it passed the check. The command is prepare_eval_data.py.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from pydantic import BaseModel
from tqdm import tqdm

from mem_agent.common.console import command_status
from mem_agent.common.guarded_files import atomic_output, open_regular, place_file
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.numbers import SEED_LIMIT
from mem_agent.common.pinned_fetch import FetchError, fetch
from mem_agent.common.printable import printable, shell_line
from mem_agent.common.usage import Problems
from mem_agent.data.hotpot_corpus import CORPUS_NAME
from mem_agent.data.index_files import INDEX_LAYOUT_ABOVE
from mem_agent.data.row_sources import HUB_ANSWER_S, HubFile, hub_file
from mem_agent.data.ruler_files import LongContextRequest, write_long_context_files
from mem_agent.evaluation.files import check_eval_file, file_sha256
from mem_agent.evaluation.request import PAPER_HQA_LENGTHS, EvalRequest
from mem_agent.settings.command import read
from mem_agent.settings.declared import ENV_MODEL_CONFIG, Switch, setting, words

CORPUS_DEADLINE_S = 3600.0  # the whole fetch, retries included: its ~47 MB need 13 KB/s to make it
HUB, BUILD = "--download: MemAgent's eval files from the Hugging Face Hub", "--build-from RAW.json: built here"
COUNTS = 'distinct positive integers, such as "50 200"'
# Each state of a ready file, and the state of a file that fails the check on its way there.
READY = {"present": "invalid", "downloaded": "download failed", "built": "build failed"}


# LENGTH's document counts, judged as the evaluator's --lengths (run-eval.sh's LENGTH is that flag's variable).
DocumentCounts = words(next(f for f in fields(EvalRequest) if f.name == "lengths").metadata["options"]["type"])


class PrepareSettings(BaseModel):
    model_config = ENV_MODEL_CONFIG

    data_root: str = setting(
        "data/ruler_hqa", "Folder of eval_<N>.json files (as run-eval.sh's).", env="DATA_ROOT", values="a folder"
    )
    length: DocumentCounts = setting(
        PAPER_HQA_LENGTHS, "Document counts N to check (run-eval.sh's LENGTH).", env="LENGTH", values=COUNTS
    )
    lengths: DocumentCounts = setting(
        "", "Another spelling of LENGTH (the vime example's README); both set must agree.", env="LENGTHS", values=COUNTS
    )
    download: Switch = setting(False, "Fetch the missing files.", env="DOWNLOAD", section=HUB)
    hf_endpoint: str = setting("https://huggingface.co", "The Hub.", env="HF_ENDPOINT", section=HUB)
    hf_repo: str = setting(
        "BytedTsinghua-SIA/hotpotqa", "The dataset (HF_ENDPOINT/datasets/HF_REPO).", env="HF_REPO", section=HUB
    )
    hf_revision: str = setting("main", "Its branch, tag or commit.", env="HF_REVISION", section=HUB)
    hub_timeout: float = setting(
        HUB_ANSWER_S, "Seconds to await the Hub's first answer per file.", env="HUB_TIMEOUT", section=HUB, gt=0, le=3600
    )
    # The dev file MemAgent's download_qa_dataset.sh fetches, and its sha256 as a published download
    # script lists it (not yet checked against a download here: CORPUS_SHA256="" skips the check).
    corpus_url: str = setting(
        "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
        f"The HotpotQA dev file, fetched to DATA_ROOT/{CORPUS_NAME} when a length above 10,000 needs it.",
        env="CORPUS_URL",
        section=HUB,
    )
    corpus_sha256: str = setting(
        "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
        "Its sha256, checked before the file is kept (empty: not checked).",
        env="CORPUS_SHA256",
        section=HUB,
        pattern=r"^([0-9a-f]{64})?$",
    )
    build_from: str = setting(
        "", "Raw HotpotQA or 2WikiMultiHopQA rows to build from.", env="BUILD_FROM", values="a file", section=BUILD
    )
    num_questions: int = setting(128, "Questions per built file.", env="NUM_QUESTIONS", section=BUILD, ge=1)
    seed: int = setting(42, "Shuffle seed of the builder.", env="SEED", section=BUILD, ge=0, le=SEED_LIMIT)
    dry_run: Switch = setting(False, "Only print what would be fetched or built.", env="DRY_RUN", section="Other")


@dataclass
class Status:
    state: str  # a key or a value of READY, or missing
    items: int | None = None
    reason: str = ""


def plan(environ: Mapping[str, str], problems: Problems) -> PrepareSettings:
    settings = read(PrepareSettings, environ, problems)
    if not settings.download:
        unused = ["HF_REPO", "HF_REVISION", "HUB_TIMEOUT", "CORPUS_URL", "CORPUS_SHA256"]
        problems.unused(unused, environ, "they choose what --download fetches")
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


def prepare(settings: PrepareSettings) -> dict[str, Status]:
    root, lengths = Path(settings.data_root), (settings.lengths or settings.length).split()
    indexed = [n for n in lengths if int(n) > INDEX_LAYOUT_ABOVE]  # they need the corpus beside them
    problem = _corpus(settings, root / CORPUS_NAME) if indexed and (settings.download or settings.build_from) else ""
    status = {n: _checked(root / f"eval_{n}.json") for n in lengths}
    failed = "download failed" if settings.download else "build failed"
    status |= {n: Status(failed, reason=problem) for n in indexed if problem and status[n].state == "missing"}
    absent = [n for n in lengths if status[n].state == "missing"]
    if absent and settings.download:
        status |= {n: _download(settings, n, os.environ.get("HF_TOKEN", "").strip() or None) for n in absent}
    elif absent and settings.build_from:
        status |= _build(settings, absent)
    return status


def _checked(path: Path, ready: str = "present", corpus: Path | None = None) -> Status:
    if not path.exists():
        return Status("missing")
    try:
        return Status(ready, len(check_eval_file(path, corpus)))
    except DataFormatError as error:
        return Status(READY[ready], reason=str(error))


def _shown(settings: PrepareSettings, *lines: object) -> bool:
    """True in a dry run, which prints a step's lines (the command that would do it) and skips the step."""
    if settings.dry_run:
        print("\n".join(printable(str(line)) for line in lines))
    return settings.dry_run


def _download(settings: PrepareSettings, n: str, token: str | None) -> Status:
    name, root = f"eval_{n}.json", Path(settings.data_root)
    url = f"{settings.hf_endpoint.rstrip('/')}/datasets/{settings.hf_repo}/resolve/{settings.hf_revision}/{name}"
    print(printable(f"{name}: downloading from {settings.hf_endpoint} ({settings.hf_repo})"), flush=True)
    sent = ["  HF_TOKEN=<set>: sent as an Authorization header, to the Hub's host only"] if token else []
    if _shown(settings, f"  GET {url} -> {root / name}", *sent):
        return Status("missing")
    root.mkdir(parents=True, exist_ok=True)
    # In DATA_ROOT, not huggingface_hub's cache (often a small home folder): a rename, never a 450 MB copy.
    with tempfile.TemporaryDirectory(prefix=f".{name}.download.", dir=root, ignore_cleanup_errors=True) as into:
        file = HubFile(settings.hf_repo, name, settings.hf_revision, settings.hf_endpoint, token or False, Path(into))
        try:  # huggingface_hub's retries, resumption and progress bar; the token goes to the Hub's hosts only
            fetched, _ = hub_file(file, settings.hub_timeout, "HUB_TIMEOUT")
        except DataFormatError as error:
            return Status("download failed", reason=str(error))
        outcome = _checked(fetched, "downloaded", root / CORPUS_NAME)
        if outcome.state != "downloaded":
            reason = outcome.reason.removeprefix(f"{fetched}: ")  # the temporary name says nothing
            return Status("download failed", reason=f"the downloaded file is not a valid eval file: {reason}")
        place_file(fetched, root / name)  # never through a link, never over a file
        return outcome


def _corpus(settings: PrepareSettings, target: Path) -> str:
    """The problem, or "" once the corpus is where the evaluator looks: --build-from's RAW (the corpus of
    the index files built from it), else CORPUS_URL's file, never kept when it fails CORPUS_SHA256."""
    source = Path(settings.build_from)
    if target.exists():
        same = not settings.build_from or target.samefile(source) or file_sha256(target) == file_sha256(source)
        return "" if same else f"{target} exists and is not --build-from {source}: move it aside"
    if settings.build_from:
        if not _shown(settings, shell_line(["cp", source, target])):
            with open_regular(source) as read, atomic_output(target, "wb") as out:
                shutil.copyfileobj(read, out)
        return ""
    print(printable(f"{CORPUS_NAME}: downloading from {settings.corpus_url}"), flush=True)
    try:
        if not _shown(settings, f"  GET {settings.corpus_url} -> {target}"):
            with atomic_output(target, "wb") as out:
                fetch(settings.corpus_url, out, sha256=settings.corpus_sha256, deadline_s=CORPUS_DEADLINE_S)
    except FetchError as error:
        return f"{CORPUS_NAME}: {error} (CORPUS_URL, CORPUS_SHA256)"
    return ""


def _build(settings: PrepareSettings, absent: list[str]) -> dict[str, Status]:
    root, raw = Path(settings.data_root), Path(settings.build_from)
    flags = ["--num-questions", settings.num_questions, "--seed", settings.seed, "--out-dir", root]
    # built in-process; a dry run shows it as the command that builds it by hand
    command = [sys.executable, "-m", "mem_agent.build_long_context", "--input", raw, "--num-docs", *absent, *flags]
    if _shown(settings, shell_line(command)):
        return {}
    request = LongContextRequest(raw, tuple(map(int, absent)), settings.num_questions, settings.seed, root, force=False)
    if command_status(lambda: write_long_context_files(request), mistakes=(DataFormatError,)):
        return {n: Status("build failed") for n in absent}  # the builder said why on stderr
    return {n: _checked(root / f"eval_{n}.json", "built") for n in absent}


def print_table(root: Path, status: dict[str, Status]) -> int:
    """The table on stdout, the reasons on stderr; how many lengths are not ready."""
    row = "{:>8} | {:<15} | {:>6} | {:>8} | {}"
    print(row.format("length", "status", "items", "size", "file"))
    for n, entry in status.items():
        path = root / f"eval_{n}.json"
        size = tqdm.format_sizeof(path.stat().st_size, "B") if path.is_file() else "-"
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


def prepare_and_report(settings: PrepareSettings) -> int:
    """0 every length ready, 1 some not; 2 on a link, a FIFO or a hard link where a file is written."""
    return command_status(lambda: min(1, print_table(Path(settings.data_root), prepare(settings))))
