"""A loopback stand-in of the Hugging Face hub serving one dataset repository of files a test wrote.

It answers the routes huggingface_hub uses to list a dataset's files and to download one, as the
hub does (huggingface_hub 1.x/2.x, read in its `hf_api.list_repo_tree` and
`file_download.get_hf_file_metadata`):
- `GET /api/datasets/<repo>/tree/<revision>[/<folder>]`: a JSON list of `{"type": "file", "path",
  "size", "oid"}` (one page: no `Link` header);
- `HEAD` and `GET /datasets/<repo>/resolve/<revision>/<file>`: the file, with the `X-Repo-Commit`
  and `ETag` headers the client keys its cache by.
Anything else is a 404 with the hub's JSON error body. Every request is recorded with the
Authorization header it came with, so a test can show which route a client asked for and what it
sent. With `storage` set, a file is served as the hub serves a large one: a 302 to that other host
(`<storage>/<file>`) with the `X-Linked-Etag` and `X-Linked-Size` headers. Point a client at it
with `HF_ENDPOINT=<url>` (read when huggingface_hub is imported: give it to a fresh process) and a
temporary `HF_HOME`.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

STANDIN_COMMIT = "c0ffee0123456789abcdef0123456789abcdef01"


@dataclass
class HubStandin:
    repo: str  # owner/name
    files: dict[str, Path]  # path in the repository -> local file
    url: str = ""
    storage: str = ""
    trickle_s: float = 0.0  # > 0: a file's body is sent one byte at a time, this long apart
    requests: list[str] = field(default_factory=list)
    authorization: list[str | None] = field(default_factory=list)

    def tree(self) -> list[dict[str, object]]:
        return [
            {"type": "file", "path": name, "size": path.stat().st_size, "oid": _sha1(path.read_bytes())}
            for name, path in sorted(self.files.items())
        ]


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _handler(hub: HubStandin) -> type[http.server.BaseHTTPRequestHandler]:
    tree_prefix = f"/api/datasets/{hub.repo}/tree/"
    resolve_prefix = f"/datasets/{hub.repo}/resolve/"

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # the test reads `requests` instead
            pass

        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def do_GET(self) -> None:
            self._answer(with_body=True)

        def _answer(self, with_body: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.requests.append(f"{self.command} {path}")
            hub.authorization.append(self.headers.get("Authorization"))
            if path.startswith(tree_prefix):
                body = json.dumps(hub.tree()).encode()
                self._send(200, body, {"Content-Type": "application/json"}, with_body)
            elif path.startswith(resolve_prefix) and "/" in path[len(resolve_prefix) :]:
                name = path[len(resolve_prefix) :].split("/", 1)[1]
                if name not in hub.files:
                    self._not_found(with_body, "Entry not found")
                    return
                data = hub.files[name].read_bytes()
                headers = {
                    "Content-Type": "application/octet-stream",
                    "X-Repo-Commit": STANDIN_COMMIT,
                    "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                }
                if hub.storage:
                    headers |= {"Location": f"{hub.storage}/{name}", "X-Linked-Size": str(len(data))}
                    headers["X-Linked-Etag"] = headers.pop("ETag")
                self._send(302 if hub.storage else 200, b"" if hub.storage else data, headers, with_body)
            else:
                self._not_found(with_body, "Repository not found")

        def _not_found(self, with_body: bool, message: str) -> None:
            self._send(404, json.dumps({"error": message}).encode(), {"X-Error-Message": message}, with_body)

        def _send(self, status: int, body: bytes, headers: dict[str, str], with_body: bool) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body and hub.trickle_s and status == 200 and headers.get("X-Repo-Commit"):
                for byte in body:  # a server that never stalls long enough for a read timeout
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(hub.trickle_s)
            elif with_body:
                self.wfile.write(body)

    return Handler


@contextmanager
def hub_standin(repo: str, files: dict[str, Path], storage: str = "", trickle_s: float = 0.0) -> Iterator[HubStandin]:
    """The stand-in, serving on 127.0.0.1 from a thread until the block ends."""
    hub = HubStandin(repo, files, storage=storage, trickle_s=trickle_s)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
