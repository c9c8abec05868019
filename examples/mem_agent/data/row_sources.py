"""Where prepare_data's rows come from: local files (JSON, JSON Lines, parquet) and the Hugging Face hub.

Every row comes with the name of the file it is in (`SourceRow.source`), so that a file's layout is
judged per file and a training row can record where it came from.

A hub dataset is read file by file: the repository's data files named for the split are
downloaded with huggingface_hub (into its cache, HF_HOME; HF_ENDPOINT and HF_TOKEN are honoured)
and read like local files. `datasets.load_dataset` cannot load MemAgent's repository by name: it
holds parquet (train, dev) beside JSON (the RULER `eval_<N>.json` files, which `datasets` files
under the test split), and `datasets` refuses a repository whose splits differ in format; nor does
it know the split `dev`. A file belongs to a split when a word of its name is the split's name
or, for train, dev and test, one of the names `datasets` gives them (`hotpotqa_train_32k.parquet`
is train, `hotpotqa_dev.parquet` is dev = validation, `eval_50.json` is in neither). A refused
connection or an unknown repository is one line (huggingface_hub retries a refused connection for
about 25 s first). With `--hf-config` the dataset's own
configuration is used instead, through `datasets` (e.g. `hotpot_qa`, `distractor`).

The hub's first answer is awaited at most `answer_s` (`--hub-timeout`), with a line on stderr that
says what is asked of whom: huggingface_hub's own client waits without a bound for a server that
accepts a connection and never answers (its file list), or tries 7 times over 6.5 minutes (its
request before a download). `hub_file`, the one way a file comes from the hub (here, and
prepare-eval-data.sh's eval files, into a folder of its choosing), asks for the file's metadata
that way before huggingface_hub downloads it. Each such call runs in a daemon thread, so a refusal
ends the process without waiting for it; the files themselves download under huggingface_hub's
read timeout (HF_HUB_DOWNLOAD_TIMEOUT).
"""

from __future__ import annotations

import functools
import importlib
import os
import queue
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any, TypeVar

from mem_agent.common.input_files import shown
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.data.qa_rows import iter_raw_rows

DATA_SUFFIXES = (".parquet", ".jsonl", ".json")
_SPLIT_NAMES = (
    frozenset({"train", "training"}),
    frozenset({"dev", "validation", "valid", "val"}),
    frozenset({"test", "testing"}),
)
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class SourceRow:
    source: str  # the file: a path, or hf://datasets/<name>@<commit>/<file>
    where: str  # "<source>: row 3" / "line 4", the prefix of every error about this row
    index: int  # the row's position in its file, from 0
    raw: Any


def file_rows(path: Path, source: str | None = None) -> Iterator[SourceRow]:
    """Rows of a local file: parquet by its suffix, else a JSON array or JSON Lines. The file is
    named as `shown` names it: the name goes into every row written (`metadata.source`)."""
    source = source or shown(path)
    if path.suffix == ".parquet":
        yield from _parquet_rows(path, source)
        return
    for index, (location, raw) in enumerate(iter_raw_rows(path)):
        yield SourceRow(source, f"{source}: {location}", index, raw)


def _parquet_rows(path: Path, source: str) -> Iterator[SourceRow]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataFormatError(f"{source}: reading parquet needs pyarrow: pip install 'mem-agent[data]'") from None
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as error:
        raise DataFormatError(f"{source}: cannot read as parquet: {error}") from None
    index = 0
    for batch in table.iter_batches(batch_size=256):
        for raw in batch.to_pylist():
            yield SourceRow(source, f"{source}: row {index}", index, raw)
            index += 1


def split_files(repo_files: Sequence[str], split: str) -> list[str]:
    """The data files of `split`, in name order: a word of the file name names the split."""
    wanted = next((names for names in _SPLIT_NAMES if split.lower() in names), frozenset({split.lower()}))
    chosen = []
    for name in repo_files:
        posix = PurePosixPath(name)
        if posix.suffix not in DATA_SUFFIXES:
            continue
        if wanted & set(_WORD.findall(posix.name.removesuffix(posix.suffix).lower())):
            chosen.append(name)
    return sorted(chosen)


HUB_ANSWER_S = 60.0  # the default of --hub-timeout
T = TypeVar("T")


def answered(
    call: Callable[[], T], answer_s: float, asked: str, knob: str = "--hub-timeout", endpoint: str | None = None
) -> T:
    """`call()`'s result; a DataFormatError line when the hub refuses, or once `answer_s` (set by
    `knob`) has passed without an answer. The call runs in a daemon thread: a hub that never
    answers cannot keep the process alive after the refusal."""
    endpoint = endpoint or os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    print(f"asking {endpoint} for {asked} (waiting up to {answer_s:g} s, {knob})", file=sys.stderr)
    outcome: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            outcome.put((True, call()))
        except BaseException as error:  # handed to the caller's thread as it is
            outcome.put((False, error))

    threading.Thread(target=run, name="hub-call", daemon=True).start()
    try:
        ok, value = outcome.get(timeout=answer_s)
    except queue.Empty:
        raise DataFormatError(f"{endpoint} gave no answer for {asked} within {answer_s:g} s ({knob})") from None
    if ok:
        return value
    if isinstance(value, DataFormatError) or not isinstance(value, _hub_errors()):
        raise value
    raise DataFormatError(f"{endpoint} gave no {asked}: {_first_line(value)}") from None


def hub_client(needed_by: str) -> ModuleType:
    """huggingface_hub, quiet: it logs each retry of a failing request to stderr; a failure is
    reported once, as our one-line error, instead."""
    try:
        import huggingface_hub
        import huggingface_hub.utils
    except ImportError:
        raise DataFormatError(f"{needed_by} needs huggingface_hub: pip install 'mem-agent[data]'") from None
    huggingface_hub.utils.logging.set_verbosity_error()
    return huggingface_hub


@dataclass(frozen=True)
class HubFile:
    """One file of a hub dataset and how to ask for it. `endpoint` and `token` None are
    huggingface_hub's own (HF_ENDPOINT as read at its import; HF_TOKEN, else a stored login);
    `token` False sends none. `folder` None is huggingface_hub's cache (HF_HOME)."""

    repo: str
    name: str
    revision: str | None
    endpoint: str | None = None
    token: str | bool | None = None
    folder: Path | None = None
    deadline_s: float = 3600.0  # the whole download: a 450 MB eval file needs 128 KB/s to make it


def hub_file(file: HubFile, answer_s: float, knob: str = "--hub-timeout") -> tuple[Path, str]:
    """`file` downloaded, and the commit it came from; a DataFormatError line when the hub refuses or
    fails. Its first answer (the file's metadata) is awaited at most `answer_s`: huggingface_hub's
    own request before a download is tried 7 times over 6.5 minutes against a silent hub."""
    hub = hub_client("a download from the Hugging Face hub")
    where = f"{file.name} of {file.repo}"
    url = hub.hf_hub_url(file.repo, file.name, repo_type="dataset", revision=file.revision, endpoint=file.endpoint)
    metadata = answered(
        lambda: hub.get_hf_file_metadata(url, token=file.token, timeout=answer_s), answer_s, where, knob, file.endpoint
    )
    # huggingface_hub times each read only: a hub that trickles a byte every few seconds is cut by the
    # overall deadline, the download left to its daemon thread (gone when the process ends).
    download = functools.partial(
        hub.hf_hub_download,
        file.repo,
        file.name,
        repo_type="dataset",
        revision=file.revision,
        endpoint=file.endpoint,
        token=file.token,
        local_dir=file.folder,
    )
    path = answered(download, file.deadline_s, where, "the overall deadline", file.endpoint)
    return Path(path), metadata.commit_hash or file.revision or "main"


def hub_rows(name: str, split: str, revision: str | None, answer_s: float = HUB_ANSWER_S) -> Iterator[SourceRow]:
    """Rows of the data files of `split` in the hub dataset `name`, file by file."""
    hub = hub_client("--hf-dataset")
    files = answered(
        lambda: hub.list_repo_files(name, repo_type="dataset", revision=revision), answer_s, f"the files of {name}"
    )
    chosen = split_files(files, split)
    if not chosen:
        shown = ", ".join(f for f in files if PurePosixPath(f).suffix in DATA_SUFFIXES)[:300] or "none"
        raise DataFormatError(f"{name} has no data file named for the split '{split}' (its data files: {shown})")
    local = [hub_file(HubFile(name, repo_file, revision), answer_s) for repo_file in chosen]
    for repo_file, (path, commit) in zip(chosen, local, strict=True):
        yield from file_rows(path, f"hf://datasets/{name}@{commit}/{repo_file}")


def datasets_rows(name: str, config: str | None, split: str, answer_s: float = HUB_ANSWER_S) -> Iterator[SourceRow]:
    """Rows of a hub dataset through `datasets` (a dataset with named configurations)."""
    try:
        import datasets
    except ImportError:
        raise DataFormatError("--hf-config needs the datasets package: pip install 'mem-agent[data]'") from None
    hub_client("--hf-config")
    datasets.logging.set_verbosity_error()
    source = f"{name}/{config}/{split}" if config else f"{name}/{split}"
    try:
        stream = answered(
            lambda: datasets.load_dataset(name, config, split=split, streaming=True), answer_s, f"the dataset {name}"
        )
        for index, raw in enumerate(stream):
            yield SourceRow(source, f"{source}: row {index}", index, raw)
    except _hub_errors() as error:
        raise DataFormatError(f"cannot load {name} ({split}) from the Hugging Face hub: {_first_line(error)}") from None


def _hub_errors() -> tuple[type[BaseException], ...]:
    """What a hub call raises besides our own DataFormatError (a refused connection is not an
    OSError in the HTTP client): huggingface_hub 1.x speaks httpx, its later releases httpx2."""
    errors: list[type[BaseException]] = [OSError, ValueError, ConnectionError]
    for module, name in (("huggingface_hub.errors", "HfHubHTTPError"), ("httpx", "HTTPError"), ("httpx2", "HTTPError")):
        try:
            errors.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
