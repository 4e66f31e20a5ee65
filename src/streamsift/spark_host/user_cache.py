"""Where streamsift keeps what it builds once per machine: the user's cache directory."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir(kind: str) -> Path:
    """`$XDG_CACHE_HOME/streamsift/<kind>` (by default under `~/.cache`)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "streamsift" / kind
