"""Durations as people write them: `500ms`, `30s`, `1h30m`, `7d`, and Go's `168h0m0s`."""

from __future__ import annotations

import math
import re
from datetime import timedelta

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 7 * 86400.0,
}
# The longest duration any setting accepts: far beyond every real window, timeout or retention,
# and well inside what timedelta and datetime arithmetic hold (timedelta overflows at ~2.7e6 years).
MAX_DURATION_DAYS = 36_500
_MAX_SECONDS = MAX_DURATION_DAYS * 86400.0
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w)")


def parse_duration(value: object) -> timedelta:
    """Parse a duration string (or a number of seconds) into a timedelta; ValueError names the problem."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '30s', '1h' or '7d', got a boolean")
    if isinstance(value, (int, float)):
        if math.isnan(value):
            raise ValueError("expected a duration such as '30s', '1h' or '7d', got NaN")
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return _bounded(float(value), value)
    if not isinstance(value, str):
        raise ValueError(
            f"expected a duration such as '30s', '1h' or '7d', got {type(value).__name__}"
        )
    text = value.strip().lower()
    if not text:
        raise ValueError("expected a duration such as '30s', '1h' or '7d', got an empty string")
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text) or pos == 0:
        raise ValueError(
            f"'{value}' is not a duration: use a number and a unit (ms, s, m, h, d), e.g. '30s', '1h', '7d'"
        )
    return _bounded(total, value)


def _bounded(seconds: float, value: object) -> timedelta:
    """A timedelta of `seconds`, or ValueError (not OverflowError) past the limit."""
    if not seconds <= _MAX_SECONDS:
        raise ValueError(
            f"{value!r} is too long a duration: the limit is {MAX_DURATION_DAYS}d (100 years)"
        )
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The shortest exact form: `7d`, `1h30m`, `250ms`."""
    ms = round(value.total_seconds() * 1000)
    if ms == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, ms = divmod(ms, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
