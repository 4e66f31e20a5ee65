"""GlassFlow's value spellings read as ours: Go durations, base64 secrets, PEM text and type names.

Pure functions: each returns the value or raises ValueError with the message the user sees
(the caller puts the GlassFlow field path in front, see `Reader.parsed`).
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import timedelta

from streamsift.config.types import FIELD_TYPE_ALIASES, CHType, FieldType, parse_clickhouse_type

_GO_DURATION = re.compile(r"\A[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+\Z")
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_DAYS = re.compile(r"(?<![\d.])(\d+)d")
_GO_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}

# Type names GlassFlow lets through without a check, read as the obvious streamsift type.
_EXTRA_FIELD_TYPES: dict[str, FieldType] = {
    "date": FieldType.TIMESTAMP,
    "date_time": FieldType.TIMESTAMP,
    "time": FieldType.TIMESTAMP,
    "timestamptz": FieldType.TIMESTAMP,
    "uuid": FieldType.STRING,
}

# GlassFlow's ClickHouse type vocabulary, to repair the lowercase names of early v1 files.
_CH_NAMES = {
    name.lower(): name
    for name in (
        "String",
        "FixedString",
        "Bool",
        "Int8",
        "Int16",
        "Int32",
        "Int64",
        "UInt8",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float32",
        "Float64",
        "Enum8",
        "Enum16",
        "UUID",
        "DateTime",
        "DateTime64",
        "LowCardinality",
        "Map",
        "Array",
        "Nullable",
        "Date",
        "Date32",
    )
}
_CH_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_go_duration(value: object) -> timedelta:
    """A GlassFlow duration: a JSON string, `Nd` read as N*24h, then Go's time.ParseDuration."""
    if not isinstance(value, str):
        raise ValueError(f'must be a duration string such as "30s", "1h" or "1d", got {value!r}')
    text = _GO_DAYS.sub(lambda m: f"{int(m.group(1)) * 24}h", value)
    if text.lstrip("+-") == "0":
        return timedelta(0)
    if not _GO_DURATION.match(text):
        raise ValueError(f'{value!r} is not a duration (e.g. "30s", "1h30m", "1d12h", "168h0m0s")')
    seconds = sum(float(n) * _GO_UNIT_SECONDS[u] for n, u in _GO_PART.findall(text))
    return timedelta(seconds=-seconds if text.startswith("-") else seconds)


def decode_base64_password(value: str) -> str:
    """GlassFlow v1/v2 store the ClickHouse password base64-encoded; undecodable text is kept."""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return value


def decode_pem(value: object) -> str:
    """PEM text as given, or decoded from base64 (as GlassFlow's v2 docs write it)."""
    if not isinstance(value, str):
        raise ValueError(f"must be a string, got {type(value).__name__}")
    text = value.strip()
    if "-----BEGIN" in text:
        return text + "\n"
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        decoded = ""
    if "-----BEGIN" in decoded:
        return decoded.strip() + "\n"
    raise ValueError(
        "not a PEM certificate (nor base64 of one): expected -----BEGIN CERTIFICATE-----"
    )


def field_type(value: object) -> FieldType:
    """Our field type for a GlassFlow schema type name (`int64`, `boolean`, `datetime`, ...)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("field type cannot be empty")
    key = value.strip().lower()
    found = FIELD_TYPE_ALIASES.get(key) or _EXTRA_FIELD_TYPES.get(key)
    if found is None:
        raise ValueError(
            f"unknown type {value!r}; GlassFlow types: string, int, uint, float, bool, array, map "
            "(and int8..int64, uint8..uint64, float32, float64, bytes, integer, number, boolean, "
            "object, datetime)"
        )
    return found


def column_type(value: object) -> tuple[CHType, bool]:
    """A ClickHouse column type, and whether it was repaired from an early v1 lowercase name."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("column type cannot be empty")
    try:
        return parse_clickhouse_type(value), False
    except ValueError as exc:
        repaired = _CH_WORD.sub(lambda m: _CH_NAMES.get(m.group(0).lower(), m.group(0)), value)
        if repaired != value:
            try:
                return parse_clickhouse_type(repaired), True
            except ValueError:
                pass
        raise ValueError(f"unsupported ClickHouse column type {value!r}: {exc}") from None
