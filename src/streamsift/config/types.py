"""Field types of the pipeline schema and ClickHouse column types, and which fit which.

Field types describe the JSON payload; column types describe the ClickHouse table. A mapping
is accepted only when the field's values can be written into the column without loss of
meaning, so type errors surface at `streamsift validate`, not at insert time.
"""

from __future__ import annotations

from enum import Enum

from streamsift.config.chtypes import CHType, parse_clickhouse_type

__all__ = [
    "SPARK_SQL_TYPES",
    "CHType",
    "FieldType",
    "check_compatible",
    "parse_clickhouse_type",
    "parse_field_type",
]


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


# The Spark SQL type of each field type's column (engine/processor.py maps these names to
# pyspark's type objects; the transforms use them in casts).
SPARK_SQL_TYPES: dict[FieldType, str] = {
    FieldType.STRING: "STRING",
    FieldType.INT: "BIGINT",
    FieldType.FLOAT: "DOUBLE",
    FieldType.BOOL: "BOOLEAN",
    FieldType.TIMESTAMP: "TIMESTAMP",
    FieldType.ARRAY: "ARRAY<STRING>",
    FieldType.MAP: "MAP<STRING, STRING>",
    FieldType.JSON: "STRING",
}

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


# Field types of single values: what join keys and computed fields may be.
SCALAR_TYPES = frozenset(
    {FieldType.STRING, FieldType.INT, FieldType.FLOAT, FieldType.BOOL, FieldType.TIMESTAMP}
)

INTEGER_COLUMNS = {f"{p}Int{b}" for p in ("", "U") for b in (8, 16, 32, 64, 128, 256)}
DECIMAL_COLUMNS = {"Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256"}
FLOAT_COLUMNS = {"Float32", "Float64", "BFloat16"}
TIME_COLUMNS = {"Date", "Date32", "DateTime", "DateTime64"}
ENUM_COLUMNS = {"Enum", "Enum8", "Enum16"}
# Columns built of other types, which a JSON value (array, object) fills.
STRUCTURED_COLUMNS = {"Array", "Map", "Tuple"}
# Column types a JSON scalar (string, number, bool) can be written into, by the JSON kind.
_TEXT_COLUMNS = (
    {"String", "FixedString", "UUID", "IPv4", "IPv6", "JSON"}
    | TIME_COLUMNS
    | ENUM_COLUMNS
    | DECIMAL_COLUMNS
)
# Families streamsift cannot fill from a JSON value, with what to do instead.
_UNWRITABLE: dict[str, str] = {
    "AggregateFunction": "aggregate states are made by ClickHouse (use a materialized view)",
    "SimpleAggregateFunction": "write the plain value into a table of the inner type",
    "Nothing": "a Nothing column holds no values",
    "Nested": "map each of its arrays to its own column (`name.member`, type Array(...))",
    "Dynamic": "use JSON or String",
    "Variant": "use JSON or String",
    "QBit": "not writable from JSON",
    "Time": "use DateTime64 or String",
    "Time64": "use DateTime64 or String",
}

# Which column types (by their inner name) each field type may be written into.
_COMPATIBLE: dict[FieldType, set[str]] = {
    FieldType.STRING: _TEXT_COLUMNS,
    FieldType.INT: INTEGER_COLUMNS
    | FLOAT_COLUMNS
    | DECIMAL_COLUMNS
    | ENUM_COLUMNS
    | {"DateTime", "DateTime64", "Bool", "String"},
    FieldType.FLOAT: FLOAT_COLUMNS | DECIMAL_COLUMNS | {"DateTime", "DateTime64", "String"},
    FieldType.BOOL: {"Bool", "UInt8", "Int8", "String"},
    FieldType.TIMESTAMP: TIME_COLUMNS | {"String"},
    FieldType.ARRAY: {"Array", "String"},
    FieldType.MAP: {"Map", "Tuple", "String", "JSON"},
    FieldType.JSON: STRUCTURED_COLUMNS | {"String", "JSON"},
}
# What any JSON value may fill inside an Array/Map/Tuple (a scalar, or a nested structure).
_ELEMENT_COLUMNS = (
    _TEXT_COLUMNS | INTEGER_COLUMNS | FLOAT_COLUMNS | STRUCTURED_COLUMNS | {"Bool", "JSON"}
)


def unwritable_part(column: CHType) -> tuple[CHType, str] | None:
    """The first part of `column` (itself or a nested type) no JSON value can fill, and why."""
    name = column.name
    if name in _UNWRITABLE or name.startswith("Interval") or name in _GEO_NAMES:
        why = _UNWRITABLE.get(name, "not writable from JSON; use String")
        return column, why
    for arg in column.args:
        if isinstance(arg, CHType):
            found = unwritable_part(arg)
            if found:
                return found
    return None


_GEO_NAMES = {
    "Point", "Ring", "LineString", "MultiLineString", "Polygon", "MultiPoint", "MultiPolygon",
    "Geometry",
}  # fmt: skip


def _elements_fit(column: CHType) -> str | None:
    """Inside a structured column every element type must take a JSON value."""
    for arg in column.args:
        if not isinstance(arg, CHType):
            continue
        inner = arg.inner
        if inner.name not in _ELEMENT_COLUMNS:
            return f"{arg} cannot hold a JSON value"
        found = _elements_fit(inner)
        if found:
            return found
    return None


def check_compatible(
    field_type: FieldType,
    column: CHType,
    field: str | None = None,
    column_name: str | None = None,
) -> str | None:
    """None when `field_type` values fit `column`; else a sentence saying why not, naming the
    field and the column when given."""
    subject = (
        f"field {field!r} ({field_type.value}) cannot go into column {column_name!r} ({column})"
        if field is not None and column_name is not None
        else f"a {field_type.value} field cannot be written to a {column} column"
    )
    bad = unwritable_part(column)
    if bad is not None:
        return f"{subject}: {bad[0]} is not supported: {bad[1]}"
    inner = column.inner
    if inner.name not in _COMPATIBLE[field_type]:
        allowed = ", ".join(sorted(_COMPATIBLE[field_type]))
        article = "an" if field_type.value[0] in "aeiou" else "a"
        return f"{subject} ({article} {field_type.value} field can go into: {allowed})"
    if inner.name in STRUCTURED_COLUMNS:
        if field_type is FieldType.MAP and inner.name == "Tuple" and not _named_tuple(inner):
            return f"{subject}: a JSON object fills a named Tuple(a T, b U) only"
        problem = _elements_fit(inner)
        if problem:
            return f"{subject}: {problem}"
    return None


def _named_tuple(t: CHType) -> bool:
    return bool(t.args) and all(isinstance(a, CHType) and a.element for a in t.args)
