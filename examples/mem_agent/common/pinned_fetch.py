"""A file at a pinned URL, kept only when its sha256 is the pinned one: the HotpotQA dev corpus
(prepare-eval-data.sh --download) and the authors' prompt templates (fetch_prompts).

aiohttp, a core dependency, does the HTTP. A stalled transfer ends (connect and each read wait at
most READ_TIMEOUT_S), so does one that trickles a byte every few seconds (the whole fetch, retries
included, ends at `deadline_s`: a body cut there is never taken for a whole one). A connection
error, a read timeout, 429 or a 5xx is tried again after a pause (1 s, 2 s); any other refusal
(404, 403) fails at once with the server's status. The bytes are hashed as they arrive; `fetch`
raises before its caller keeps anything when the digest is not the pin, so a file written through
`atomic_output` (common/guarded_files.py) is never kept then. A loopback address never goes
through an environment proxy; any other honours HTTP(S)_PROXY and NO_PROXY.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import urllib.parse
from typing import BinaryIO

import aiohttp
from tqdm import tqdm

READ_TIMEOUT_S = 30.0  # to connect, and for each read
ATTEMPTS = 3
BLOCK = 1 << 20
_TRANSIENT_STATUS = {408, 429}


class FetchError(Exception):
    """The file could not be fetched, or is not the pinned one; the message is one line naming the URL."""


class _Transient(Exception):
    """A failure worth another try."""


def fetch(
    url: str, out: BinaryIO, *, sha256: str, deadline_s: float, deadline: str = "overall", max_bytes: int | None = None
) -> None:
    """Write what `url` serves into `out` (from its start again on a retry). FetchError when it
    cannot be fetched within `deadline_s` in all (the message names the `deadline`), is larger than
    `max_bytes`, or its sha256 is not `sha256` (empty: not checked)."""
    try:
        digest = asyncio.run(asyncio.wait_for(_attempts(url, out, deadline_s, max_bytes), deadline_s))
    except TimeoutError:
        raise FetchError(f"GET {url}: not complete within {deadline_s:g} s ({deadline} deadline)") from None
    if sha256 and digest != sha256:
        raise FetchError(f"GET {url}: sha256 {digest} is not the pinned {sha256}; nothing was kept")


async def _attempts(url: str, out: BinaryIO, deadline_s: float, max_bytes: int | None) -> str:
    wait = min(READ_TIMEOUT_S, deadline_s)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=wait, sock_read=wait)
    async with aiohttp.ClientSession(timeout=timeout, trust_env=not _is_loopback(url)) as session:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await _attempt(session, url, out, max_bytes)
            except _Transient as why:
                if attempt == ATTEMPTS:
                    raise FetchError(f"{why} (tried {ATTEMPTS} times)") from None
            await asyncio.sleep(2 ** (attempt - 1))
    raise AssertionError("unreachable")


async def _attempt(session: aiohttp.ClientSession, url: str, out: BinaryIO, max_bytes: int | None) -> str:
    """One try: the sha256 of the whole body, written into `out`."""
    try:
        async with session.get(url) as response:
            if response.status >= 400:
                reason = f"GET {url}: HTTP {response.status} {response.reason}"
                if response.status >= 500 or response.status in _TRANSIENT_STATUS:
                    raise _Transient(reason)
                raise FetchError(reason)
            out.seek(0)
            out.truncate()
            digest, written = hashlib.sha256(), 0
            total = response.content_length
            with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=url[-40:], leave=False) as bar:
                async for block in response.content.iter_chunked(BLOCK):
                    written += len(block)
                    if max_bytes is not None and written > max_bytes:
                        raise FetchError(f"GET {url}: more than {max_bytes} bytes; not the pinned file")
                    out.write(block)
                    digest.update(block)
                    bar.update(len(block))
            return digest.hexdigest()
    except aiohttp.ClientError as error:  # refused, reset, a read timeout, a body cut short
        raise _Transient(f"GET {url}: {error or type(error).__name__}") from None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
