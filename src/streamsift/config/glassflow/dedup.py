"""A GlassFlow dedup (a key and a time window) read as our `dedup`."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from streamsift.config.durations import format_duration
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field
from streamsift.config.models import MAX_DEDUP_WINDOW

# expr-lang's map of fields, GlassFlow's composite key: {"trace_id":trace_id,"span_id":span_id}
_ENTRY = r'\s*"([A-Za-z_][\w.]*)"\s*:\s*([A-Za-z_][\w.]*)\s*'
_COMPOSITE = re.compile(rf"\A\s*\{{{_ENTRY}(,{_ENTRY})*\}}\s*\Z")


def composite_key(key: str) -> list[str] | None:
    """The fields of a composite key written as an expr-lang map whose entries each name
    their own field (`{"a":a,"b":b}`), or None for any other key."""
    if not _COMPOSITE.match(key):
        return None
    pairs = re.findall(_ENTRY, key)
    if any(name != field for name, field in pairs):
        return None
    return [field for _, field in pairs]


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
    keys = (composite_key(key) or [key]) if key is not None else []
    for one in keys:
        if fields and one not in fields:
            r.problem(
                key_path,
                f"dedup key {one!r} not found in schema_fields for source {source_label!r}",
            )
    window = r.duration(holder, "time_window", window_path)
    check_window(r, holder, window_path, window)
    if key is None or window is None:
        return None
    return {"key": keys if len(keys) > 1 else keys[0], "time_window": format_duration(window)}
