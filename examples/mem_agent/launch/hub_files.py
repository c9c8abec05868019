"""One file over HTTP(S) into an open file: connect and read timeouts, a progress line, retries of
what is transient only, and a token that never leaves the host it is meant for.

prepare-eval-data.sh fetches MemAgent's eval files (up to ~450 MB each) from the Hugging Face Hub.
A stalled transfer must end (every socket read has a timeout), so must one that trickles (the
whole fetch, retries included, has a deadline: common/http_deadline.py), a person must see it
move (tqdm on stderr), a refused request (404, 401) fails at once with the server's status, and a connection
error, a timeout, 429 or a 5xx is tried again after a pause (1 s, 2 s, ...). The token is an
Authorization header that follows redirects on the same host only: the Hub redirects downloads to
a storage host, which must never see it (curl's rule too).
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from tqdm import tqdm

from mem_agent.common.guarded_files import atomic_output
from mem_agent.common.http_deadline import Deadline

TIMEOUT_S = 30.0  # to connect, and for each read: a stalled transfer ends after this long without a byte
DEADLINE_S = 3600.0  # the whole fetch, retries included: a 450 MB file needs 128 KB/s to make it
ATTEMPTS = 3
BLOCK = 1 << 20
_TRANSIENT_STATUS = {429, 500, 502, 503, 504}


class FetchError(Exception):
    """The file could not be fetched; the message is one line (the status or the network error)."""


class _SameHostAuthorization(urllib.request.HTTPRedirectHandler):
    """Redirects keep the Authorization header only while they stay on the host it was given for."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        token = req.unredirected_hdrs.get("Authorization")
        same_host = urllib.parse.urlsplit(newurl).hostname == urllib.parse.urlsplit(req.full_url).hostname
        if new is not None and token and same_host:
            new.add_unredirected_header("Authorization", token)
        return new


def fetch(
    url: str,
    out: BinaryIO,
    *,
    token: str | None,
    label: str,
    timeout_s: float = TIMEOUT_S,
    deadline_s: float = DEADLINE_S,
) -> int:
    """Write what `url` serves into `out` (from its start, again on a retry); returns the bytes written."""
    with Deadline(deadline_s) as deadline:
        opener = urllib.request.build_opener(_SameHostAuthorization(), *deadline.handlers())
        for attempt in range(1, ATTEMPTS + 1):
            outcome = _attempt(opener, url, out, token, label, min(timeout_s, deadline.left()))
            if deadline.expired:  # a body without a length, cut at the deadline, looks complete: never is
                raise FetchError(f"{_shown(url)}: not complete within {deadline_s:g} s, the overall deadline")
            if isinstance(outcome, int):
                return outcome
            if attempt == ATTEMPTS:
                raise FetchError(f"{outcome} (tried {ATTEMPTS} times)")
            time.sleep(min(2 ** (attempt - 1), deadline.left()))
    raise AssertionError("unreachable")


class _NotKept(Exception):
    """A fetched file that its check refused: the block's way out of atomic_output without keeping it."""


def fetch_file(url: str, path: Path, *, token: str | None, check: Callable[[Path], str | None]) -> str | None:
    """`url` fetched into `path` (common/guarded_files.py: never through a link, atomically), which it
    replaces only when `check`, given the fetched file, finds no problem (None); the problem otherwise,
    with `path` left as it was. FetchError when it cannot be fetched."""
    try:
        with atomic_output(path, "wb") as out:
            fetch(url, out, token=token, label=Path(path).name)
            out.flush()
            problem = check(Path(out.name))
            if problem is not None:
                raise _NotKept(problem)
    except _NotKept as refused:
        return str(refused)
    return None


def _attempt(
    opener: urllib.request.OpenerDirector, url: str, out: BinaryIO, token: str | None, label: str, timeout_s: float
) -> int | str:
    """One try: the bytes written once `out` holds the whole file, else why not (a FetchError when
    that is not transient)."""
    request = urllib.request.Request(url)
    if token:
        request.add_unredirected_header("Authorization", f"Bearer {token}")
    try:
        with opener.open(request, timeout=max(timeout_s, 0.001)) as response:
            out.seek(0)
            out.truncate()
            return _copy(response, out, label)
    except urllib.error.HTTPError as error:
        reason = f"HTTP {error.code} {error.reason} from {_shown(url)}"
        if error.code not in _TRANSIENT_STATUS:
            raise FetchError(reason) from None
        return reason
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        return f"{_shown(url)}: {getattr(error, 'reason', None) or error}"


def _copy(response: http.client.HTTPResponse, out: BinaryIO, label: str) -> int:
    total = int(response.headers.get("Content-Length") or 0) or None
    written = 0
    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, leave=False) as progress:
        while block := response.read(BLOCK):
            out.write(block)
            written += len(block)
            progress.update(len(block))
    if total is not None and written < total:
        raise OSError(f"the connection closed after {written} of {total} bytes")
    return written


def _shown(url: str) -> str:
    """The address without a query (a signed storage URL carries its signature there)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
