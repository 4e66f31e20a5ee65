"""Field types of the pipeline schema and ClickHouse column types, and which fit which.

Field types describe the JSON payload; column types describe the ClickHouse table. A mapping
is accepted only when the field's values can be written into the column without loss of
meaning, so type errors surface at `streamsift validate`, not at insert time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class FieldType(str, Enum):
    """Types a payload field can have. JSON values must match them strictly (no coercion)."""

    STRING = "string"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    TIMESTAMP = "timestamp"
    ARRAY = "array"
    MAP = "map"
    JSON = "json"


# Aliases accepted in pipeline files, including GlassFlow's type names.
FIELD_TYPE_ALIASES: dict[str, FieldType] = {
    "string": FieldType.STRING,
    "bytes": FieldType.STRING,
    "str": FieldType.STRING,
    "int": FieldType.INT,
    "integer": FieldType.INT,
    "int8": FieldType.INT,
    "int16": FieldType.INT,
    "int32": FieldType.INT,
    "int64": FieldType.INT,
    "uint": FieldType.INT,
    "uint8": FieldType.INT,
    "uint16": FieldType.INT,
    "uint32": FieldType.INT,
    "uint64": FieldType.INT,
    "long": FieldType.INT,
    "float": FieldType.FLOAT,
    "float32": FieldType.FLOAT,
    "float64": FieldType.FLOAT,
    "double": FieldType.FLOAT,
    "number": FieldType.FLOAT,
    "bool": FieldType.BOOL,
    "boolean": FieldType.BOOL,
    "timestamp": FieldType.TIMESTAMP,
    "datetime": FieldType.TIMESTAMP,
    "array": FieldType.ARRAY,
    "list": FieldType.ARRAY,
    "map": FieldType.MAP,
    "object": FieldType.MAP,
    "json": FieldType.JSON,
}


def parse_field_type(value: object) -> FieldType:
    if isinstance(value, FieldType):
        return value
    if not isinstance(value, str) or value.strip().lower() not in FIELD_TYPE_ALIASES:
        allowed = ", ".join(t.value for t in FieldType)
        raise ValueError(f"unknown field type {value!r}; use one of: {allowed}")
    return FIELD_TYPE_ALIASES[value.strip().lower()]


@dataclass(frozen=True)
class CHType:
    """A parsed ClickHouse type: a name and its arguments (nested types or literals)."""

    name: str
    args: tuple[CHType | str, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}({', '.join(str(a) for a in self.args)})"

    @property
    def inner(self) -> CHType:
        """The type under Nullable/LowCardinality wrappers."""
        t = self
        while t.name in ("Nullable", "LowCardinality") and t.args and isinstance(t.args[0], CHType):
            t = t.args[0]
        return t

    @property
    def nullable(self) -> bool:
        t = self
        while t.name in ("Nullable", "LowCardinality") and t.args and isinstance(t.args[0], CHType):
            if t.name == "Nullable":
                return True
            t = t.args[0]
        return False


_INTS = {f"{p}Int{b}" for p in ("", "U") for b in (8, 16, 32, 64, 128, 256)}
_SIMPLE = _INTS | {
    "Float32",
    "Float64",
    "BFloat16",
    "Bool",
    "String",
    "UUID",
    "Date",
    "Date32",
    "DateTime",
    "IPv4",
    "IPv6",
    "JSON",
}
_WITH_ARGS = {
    "FixedString",
    "DateTime",
    "DateTime64",
    "Decimal",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Decimal256",
    "Nullable",
    "LowCardinality",
    "Array",
    "Map",
    "Enum8",
    "Enum16",
    "Tuple",
}
_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<lit>'(?:[^'\\]|\\.)*'(?:\s*=\s*-?\d+)?|-?\d+)|(?P<p>[(),]))"
)


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot read ClickHouse type {text!r} at position {pos}")
            kind = m.lastgroup or "p"
            self.tokens.append((kind, m.group(kind).strip()))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise ValueError("unexpected end of ClickHouse type")
        self.i += 1
        return tok

    def parse_type(self) -> CHType:
        kind, name = self.take()
        if kind != "name":
            raise ValueError(f"expected a type name, got {name!r}")
        if self.peek() != ("p", "("):
            if name not in _SIMPLE:
                raise ValueError(f"unknown ClickHouse type {name!r}")
            return CHType(name)
        if name not in _WITH_ARGS:
            raise ValueError(f"ClickHouse type {name!r} takes no arguments")
        self.take()
        args: list[CHType | str] = []
        while True:
            tok = self.peek()
            if tok is None:
                raise ValueError(f"missing ')' after {name}(")
            if tok[0] == "lit":
                args.append(self.take()[1])
            else:
                args.append(self.parse_type())
            sep = self.take()
            if sep == ("p", ")"):
                break
            if sep != ("p", ","):
                raise ValueError(f"expected ',' or ')' in {name}(...)")
        return CHType(name, tuple(args))


def parse_clickhouse_type(text: str) -> CHType:
    """Parse a ClickHouse column type; ValueError says what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a ClickHouse column type is required, e.g. String, UInt64, DateTime64(3)")
    parser = _Parser(text)
    result = parser.parse_type()
    if parser.peek() is not None:
        raise ValueError(f"unexpected text after ClickHouse type in {text!r}")
    _check_args(result)
    return result


def _check_args(t: CHType) -> None:
    types = [a for a in t.args if isinstance(a, CHType)]
    lits = [a for a in t.args if isinstance(a, str)]
    need = {"Nullable": (1, 0), "LowCardinality": (1, 0), "Array": (1, 0), "Map": (2, 0)}
    if t.name in need and (len(types), len(lits)) != need[t.name]:
        raise ValueError(f"{t.name} takes {need[t.name][0]} type argument(s): {t}")
    if t.name == "FixedString" and (len(lits) != 1 or types):
        raise ValueError(f"FixedString takes a length: FixedString(16), got {t}")
    if t.name in ("Decimal",) and (len(lits) != 2 or types):
        raise ValueError(f"Decimal takes precision and scale: Decimal(18, 4), got {t}")
    if t.name.startswith("Decimal") and t.name != "Decimal" and (len(lits) != 1 or types):
        raise ValueError(f"{t.name} takes a scale: {t.name}(4), got {t}")
    if (
        t.name == "DateTime64"
        and not (1 <= len(lits) <= 2)
        or t.name == "DateTime"
        and len(lits) > 1
    ):
        raise ValueError(f"bad arguments for {t.name}: {t}")
    for a in types:
        _check_args(a)


# Which column types (by their inner name) each field type may be written into.
_COMPATIBLE: dict[FieldType, set[str]] = {
    FieldType.STRING: {
        "String",
        "FixedString",
        "UUID",
        "Date",
        "Date32",
        "DateTime",
        "DateTime64",
        "Enum8",
        "Enum16",
        "IPv4",
        "IPv6",
        "JSON",
        "Decimal",
        "Decimal32",
        "Decimal64",
        "Decimal128",
        "Decimal256",
    },
    FieldType.INT: _INTS
    | {
        "Float32",
        "Float64",
        "Decimal",
        "Decimal32",
        "Decimal64",
        "Decimal128",
        "Decimal256",
        "DateTime",
        "DateTime64",
        "Bool",
        "String",
    },
    FieldType.FLOAT: {
        "Float32",
        "Float64",
        "BFloat16",
        "Decimal",
        "Decimal32",
        "Decimal64",
        "Decimal128",
        "Decimal256",
        "String",
    },
    FieldType.BOOL: {"Bool", "UInt8", "Int8", "String"},
    FieldType.TIMESTAMP: {"DateTime", "DateTime64", "Date", "Date32", "String"},
    FieldType.ARRAY: {"Array", "String"},
    FieldType.MAP: {"Map", "String", "JSON"},
    FieldType.JSON: {"String", "JSON"},
}


def check_compatible(field_type: FieldType, column: CHType) -> str | None:
    """None when `field_type` values fit `column`; else a sentence saying why not."""
    inner = column.inner
    if inner.name in _COMPATIBLE[field_type]:
        return None
    allowed = ", ".join(sorted(_COMPATIBLE[field_type]))
    return f"a {field_type.value} field cannot be written to a {column} column (allowed: {allowed})"
