"""A GlassFlow dedup (a key and a time window) read as our `dedup`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from streamsift.config.durations import format_duration
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field
from streamsift.config.models import MAX_DEDUP_WINDOW


def check_window(r: Reader, holder: dict[str, Any], path: str, window: timedelta | None) -> None:
    """`holder.time_window` (read as `window`) is present, above zero and at most 7 days."""
    if holder.get("time_window") is None:
        r.problem(path, "required field is missing")
    elif window is not None and window <= timedelta(0):
        r.problem(path, "time_window must be greater than zero")
    elif window is not None and window > MAX_DEDUP_WINDOW:
        r.problem(path, f"{format_duration(window)} exceeds the 7d maximum")


def read_dedup(
    r: Reader,
    key: str | None,
    key_path: str,
    holder: dict[str, Any],
    path: str,
    fields: dict[str, Field],
    source_label: str,
) -> dict[str, Any] | None:
    """Our `dedup` from a GlassFlow key and `holder.time_window`; the key must be a schema field."""
    window_path = f"{path}.time_window"
    r.origin("dedup", path)
    r.origin("dedup.key", key_path)
    r.origin("dedup.time_window", window_path)
    if key is not None and fields and key not in fields:
        r.problem(
            key_path,
            f"dedup key {key!r} not found in schema_fields for source {source_label!r}",
        )
    window = r.duration(holder, "time_window", window_path)
    check_window(r, holder, window_path, window)
    if key is None or window is None:
        return None
    return {"key": key, "time_window": format_duration(window)}
