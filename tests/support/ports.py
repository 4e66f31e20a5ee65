"""Loopback ports for test servers: the product's `free_port` (bound by the OS, closed again),
and `closed_port`, the same thing named for what a test wants of it."""

from __future__ import annotations

from streamsift.embedded.broker import free_port


def closed_port() -> int:
    """A loopback port nothing listens on: a client sent there meets a refused connection."""
    return free_port()


__all__ = ["closed_port", "free_port"]
