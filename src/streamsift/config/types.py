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


# The Spark SQL type of each field type's column (runtime/processor.py maps these names to
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
    }
    | DECIMAL_COLUMNS,
    FieldType.INT: INTEGER_COLUMNS
    | {
        "Float32",
        "Float64",
        "DateTime",
        "DateTime64",
        "Bool",
        "String",
    }
    | DECIMAL_COLUMNS,
    FieldType.FLOAT: {
        "Float32",
        "Float64",
        "BFloat16",
        "String",
    }
    | DECIMAL_COLUMNS,
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
