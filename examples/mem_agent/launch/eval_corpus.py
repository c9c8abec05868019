"""prepare-eval-data.sh's corpus: the HotpotQA dev file that index-layout eval files point into,
fetched and checked, or the --build-from file copied where the evaluator looks for it.

The evaluator reads the corpus from hotpotqa_dev.json beside the eval files (MemAgent's name for
it); lengths above 10,000 documents need it before their files can be checked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mem_agent.common.guarded_files import atomic_output, open_regular
from mem_agent.common.printable import printable, shell_line
from mem_agent.data.hotpot_corpus import CORPUS_NAME
from mem_agent.evaluation.files import file_sha256
from mem_agent.launch.hub_files import FetchError, fetch_file

# The dev file MemAgent's download_qa_dataset.sh fetches, and its sha256 as a published download
# script lists it (not yet checked against a download here: CORPUS_SHA256="" skips the check).
HOTPOTQA_DEV_URL = "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"
HOTPOTQA_DEV_SHA256 = "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea"


def download_corpus(root: Path, url: str, sha256: str, dry_run: bool) -> str:
    """root/hotpotqa_dev.json fetched and its sha256 checked (empty: not checked); the problem, or ""
    once it is there. A file that fails the check is never kept."""
    print(printable(f"{CORPUS_NAME}: downloading from {url}"), flush=True)
    if dry_run:
        print(printable(f"  GET {url} -> {root / CORPUS_NAME}"))
        return ""

    def matching(partial: Path) -> str | None:
        sha = file_sha256(partial)
        return f"{CORPUS_NAME}: sha256 {sha}, expected CORPUS_SHA256={sha256}" if sha256 and sha != sha256 else None

    try:
        return fetch_file(url, root / CORPUS_NAME, token=None, check=matching) or ""
    except FetchError as error:
        return f"{CORPUS_NAME}: {error}"


def copy_corpus(source: Path, target: Path, dry_run: bool) -> str:
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
