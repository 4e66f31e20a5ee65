"""CAST / TRY_CAST for the expression preview's interpreter, as Spark (ANSI mode) converts,
and `compare`, Spark's ordering of two values (it casts text compared with a time).

A conversion Spark cannot make fails the record in a running pipeline (`DeadLetter`) for CAST,
and gives null for TRY_CAST. Times are naive UTC datetimes, as the preview's events carry them.
Casts to types the preview does not model (binary, structs, arrays, decimals with a scale) are
not previewed. Text is parsed with fixed, linear patterns (no pattern comes from a request).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from streamsift.service.authoring.expressions.values import (
    DeadLetter,
    NotPreviewable,
    int64,
    kind_of,
)

_INTS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_FLOATS = {"FLOAT", "DOUBLE", "DECIMAL", "BIGDECIMAL"}
_TEXTS = {"TEXT", "VARCHAR", "CHAR", "STRING", "NCHAR", "NVARCHAR"}
_TIMES = {"TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ", "TIMESTAMPNTZ", "DATETIME"}
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
# Spark's forms of a date or time in text: `2026-1-2`, `2026-01-02 03:04:05.123`, `...T...Z`
_TIME_TEXT = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:[T ]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,9}))?)?)?"
    r" ?(Z|[+-][0-9]{2}:?[0-9]{2})?"
)
_EPOCH = datetime(1970, 1, 1)
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def cast(value: Any, to: str, safe: bool) -> Any:
    """`value` as Spark type `to` (sqlglot's name for it: INT, TEXT, TIMESTAMPTZ, ...)."""
    if value is None:
        return None
    try:
        return _cast(value, to.upper())
    except DeadLetter:
        if safe:
            return None
        raise


def _cast(value: Any, to: str) -> Any:  # noqa: C901 - one branch per target type
    if to in _TEXTS:
        return text_of(value)
    if to in _INTS:
        return _integer(value, _INTS[to])
    if to in _FLOATS:
        return _floating(value)
    if to == "BOOLEAN":
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            return value != 0
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise DeadLetter(f"cannot convert {_shown(value)} to boolean")
    if to in _TIMES:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return datetime.fromtimestamp(value, timezone.utc).replace(tzinfo=None)
            except (OverflowError, OSError, ValueError):
                raise DeadLetter(f"cannot convert {_shown(value)} to timestamp") from None
        moment = to_time(value, datetime.min)
        if isinstance(moment, datetime):
            return moment
        if isinstance(moment, date):
            return datetime(moment.year, moment.month, moment.day)
        raise NotPreviewable(f"CAST of {kind_of(value)} to timestamp")
    if to == "DATE":
        moment = to_time(value, date.min)
        if isinstance(moment, datetime):
            return moment.date()
        if isinstance(moment, date):
            return moment
        raise NotPreviewable(f"CAST of {kind_of(value)} to date")
    raise NotPreviewable(f"CAST to {to.lower()}")


def _integer(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        result = int(value)
    elif isinstance(value, int):
        result = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise DeadLetter(f"cannot convert {_shown(value)} to an integer")
        result = math.trunc(value)
    elif isinstance(value, datetime):  # seconds since the epoch, as Spark counts them
        result = math.floor((value - _EPOCH).total_seconds())
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > 40 or not _INTEGER_TEXT.fullmatch(text):
            raise DeadLetter(f"cannot convert {_shown(value)} to an integer")
        result = int(text)
    else:
        raise NotPreviewable(f"CAST of {kind_of(value)} to an integer")
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if not low <= result <= high:
        raise DeadLetter(f"cannot convert {_shown(value)}: out of range")
    return int64(result)


def _floating(value: Any) -> float:
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, datetime):
        return (value - _EPOCH).total_seconds()
    if isinstance(value, str):
        text = value.strip()
        named = {"nan": math.nan, "infinity": math.inf, "-infinity": -math.inf, "inf": math.inf}
        if text.lower() in named:
            return named[text.lower()]
        if len(text) > 400 or "_" in text or text.lower().lstrip("+-") in ("nan", "inf"):
            raise DeadLetter(f"cannot convert {_shown(value)} to a number")
        try:
            return float(text)
        except ValueError:
            raise DeadLetter(f"cannot convert {_shown(value)} to a number") from None
    raise NotPreviewable(f"CAST of {kind_of(value)} to a number")


def text_of(value: Any) -> str:
    """Spark's text for a value (as CAST(... AS STRING) writes it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if isinstance(value, date):
        return value.isoformat()
    raise NotPreviewable(f"CAST of {kind_of(value)} to string")


def _double_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    shown = "".join(map(str, digits))
    power = len(shown) - 1 + int(exponent)
    return ("-" if sign else "") + f"{shown[0]}.{shown[1:] or '0'}E{power}"


def to_time(value: Any, other: Any = None) -> Any:
    """`value` read as a time when it is text (and `other`, what it is compared with, is a time
    or not given); other values as they are. Unreadable text is a dead letter, as in Spark."""
    if not isinstance(value, str) or (
        other is not None and not isinstance(other, (date, datetime))
    ):
        return value
    text = value.strip()
    found = _TIME_TEXT.fullmatch(text) if len(text) <= 64 else None
    if found is None:
        raise DeadLetter(f"cannot convert {_shown(value)} to a time")
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    try:
        if hour is None and zone is None and not isinstance(other, datetime):
            return date(int(year), int(month), int(day))
        moment = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
        )
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    except (ValueError, OverflowError):
        raise DeadLetter(f"cannot convert {_shown(value)} to a time") from None
    return moment


def compare(a: Any, b: Any) -> int | None:
    """Spark's ordering of two values (None when either is null); text compared with a time is
    read as a time, as Spark casts it."""
    if a is None or b is None:
        return None
    if isinstance(a, (datetime, date)) or isinstance(b, (datetime, date)):
        a, b = to_time(a, b), to_time(b, a)
        if not (isinstance(a, date) and isinstance(b, date)):
            raise NotPreviewable(f"comparing {kind_of(a)} with {kind_of(b)}")
        if type(a) is not type(b):
            a, b = _as_datetime(a), _as_datetime(b)
    elif isinstance(a, bool) != isinstance(b, bool):
        raise NotPreviewable(f"comparing {kind_of(a)} with {kind_of(b)}")
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        if math.isnan(a) or math.isnan(b):  # Spark: NaN equals NaN and is above all numbers
            return (not math.isnan(b)) - (not math.isnan(a))
    elif type(a) is not type(b) or isinstance(a, (list, dict)):
        raise NotPreviewable(f"comparing {kind_of(a)} with {kind_of(b)}")
    return (a > b) - (a < b)


def _as_datetime(value: date) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime(value.year, value.month, value.day)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
