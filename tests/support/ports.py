"""Loopback ports for test servers."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on: bound by the OS, then closed again. Free now; a
    server started next can take it, and a client sent there meets a refused connection."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
