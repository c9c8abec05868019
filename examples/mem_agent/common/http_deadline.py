"""An overall deadline for an HTTP transfer made with urllib, besides its per-read timeout.

A socket timeout bounds each read, not the transfer: a server that sends a byte every few seconds
keeps a download alive for ever (a 450 MB file at a byte per 5 s would take 70 years), in its
headers or in its body. `Deadline` shuts every connection opened through its handlers when its
time is up, so a read blocked anywhere returns at once and the caller reports the deadline
(`expired`) instead of a broken connection. A connection is watched from the moment it is made,
through http.client's `_create_connection` hook, on a duplicate of its socket: an HTTPS
connection's TLS layer takes the original socket over, and shutting the duplicate shuts the
connection under it all the same. Connecting waits at most the time left (`left()`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any


class Deadline:
    """Connections opened through `handlers()` are shut `seconds` after the block is entered."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._ends = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._ends = time.monotonic() + self.seconds
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            for watched in self._sockets:
                watched.close()
            self._sockets.clear()

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(0.0, self._ends - time.monotonic())

    def handlers(self) -> list[urllib.request.BaseHandler]:
        """HTTP and HTTPS handlers for urllib.request.build_opener, in place of its own."""
        return [_WatchedHTTP(self), _WatchedHTTPS(self)]

    def watch(self, connection: socket.socket) -> None:
        with self._lock:
            watched = connection.dup()
            self._sockets.append(watched)
            if self.expired:  # made after the deadline (a connect that outlasted it): shut at once
                _shut(watched)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for watched in self._sockets:
                _shut(watched)


def _shut(watched: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the other side
        watched.shutdown(socket.SHUT_RDWR)


class _Watching:
    """A urllib handler whose connections are watched by a Deadline."""

    deadline: Deadline

    def do_open(self, http_class: Callable[..., Any], req: urllib.request.Request, **kwargs: Any) -> Any:
        deadline = self.deadline

        def connection(*args: Any, **kw: Any) -> Any:
            made = http_class(*args, **kw)
            create = made._create_connection  # http.client's hook for making the socket

            def watched(*a: Any, **k: Any) -> socket.socket:
                sock = create(*a, **k)
                deadline.watch(sock)
                return sock

            made._create_connection = watched
            return made

        return super().do_open(connection, req, **kwargs)  # type: ignore[misc]


class _WatchedHTTP(_Watching, urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline


class _WatchedHTTPS(_Watching, urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline
