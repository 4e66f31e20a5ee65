"""Mapped columns shaped into what their ClickHouse column takes, where ClickHouse's own cast
from the pipeline's column would refuse the value.

On an Arrow insert ClickHouse casts most values itself: strings into UUID, IPv4/IPv6, Enum
(names or numbers), Decimal, FixedString and JSON; numbers into Enum, Decimal, DateTime64;
`list<string>` into Array(UInt64); `map<string, string>` into Map(String, Int32). It does not
read JSON text into Array/Map/Tuple (its cast expects its own text format), nor ISO-8601
timestamps with a zone (`...Z`) into DateTime, nor JSON objects inside arrays. Such columns are
converted here, value by value, into the Arrow type of the column; a value that cannot be
converted fails its own row only, with a reason that names the column (it goes to the DLQ).
Columns ClickHouse casts itself pass through untouched (no cost on the common path), except
that integers are checked against their column's range: ClickHouse would wrap a -3 into a
UInt32 as 4294967293, silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.types import CHType
from streamsift.transforms.parse import json_kind, parse_timestamp

UTC = timezone.utc
TIME_FAMILIES = frozenset({"Date", "Date32", "DateTime", "DateTime64"})
STRUCTURED = frozenset({"Array", "Map", "Tuple"})
_SMALL_INTS = {f"Int{b}" for b in (8, 16, 32, 64)}
_SMALL_UINTS = {f"UInt{b}" for b in (8, 16, 32, 64)}
_FLOATS = {"Float32", "Float64", "BFloat16"}
_INT_RANGE = {
    **{f"Int{b}": (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for b in (8, 16, 32, 64, 128, 256)},
    **{f"UInt{b}": (0, 2**b - 1) for b in (8, 16, 32, 64, 128, 256)},
}


@dataclass(frozen=True)
class Shaped:
    """The shaped table (same rows) and, per row index, why a value did not fit."""

    table: pa.Table
    errors: dict[int, str]


def needs_shaping(arrow_type: pa.DataType, column: CHType) -> bool:
    """Whether ClickHouse's own cast from `arrow_type` would refuse values `column` takes."""
    inner = column.inner
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return inner.name in TIME_FAMILIES or inner.name in STRUCTURED
    if pa.types.is_map(arrow_type) and inner.name == "Tuple":
        return True
    if (pa.types.is_list(arrow_type) or pa.types.is_map(arrow_type)) and inner.name in (
        "String",
        "JSON",
    ):
        return True  # an array or object written as JSON text
    if pa.types.is_list(arrow_type) or pa.types.is_map(arrow_type):
        return any(
            isinstance(a, CHType) and (a.inner.name in TIME_FAMILIES or a.inner.name in STRUCTURED)
            for a in inner.args
        )
    return False


def arrow_type(column: CHType) -> pa.DataType:
    """The Arrow type sent for a ClickHouse column type (ClickHouse casts it on insert)."""
    t = column.inner
    name = t.name
    types = [a for a in t.args if isinstance(a, CHType)]
    if name in ("Date", "Date32"):
        return pa.date32()
    if name == "DateTime":
        return pa.timestamp("s", tz="UTC")
    if name == "DateTime64":
        precision = _precision(t)
        unit = "ms" if precision <= 3 else "us" if precision <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC")
    if name == "Array":
        return pa.list_(arrow_type(types[0]))
    if name == "Map":
        return pa.map_(arrow_type(types[0]), arrow_type(types[1]))
    if name == "Tuple":
        return pa.struct([(_member(a, i), arrow_type(a)) for i, a in enumerate(types)])
    if name in _SMALL_INTS:
        return pa.int64()
    if name in _SMALL_UINTS:
        return pa.uint64()
    if name in _FLOATS:
        return pa.float64()
    if name == "Bool":
        return pa.bool_()
    return pa.string()  # String, FixedString, UUID, IPv4/6, Enum, Decimal, JSON, Int128+


def shape_columns(table: pa.Table, columns: Sequence[tuple[str, CHType]]) -> Shaped:
    """Convert the columns of `table` that need it (`needs_shaping`) for their ClickHouse type."""
    errors: dict[int, str] = {}
    arrays = []
    for name, ctype in columns:
        col = table.column(name)
        if not needs_shaping(col.type, ctype):
            arrays.append(_check_integer_range(col, name, ctype, errors))
            continue
        values = []
        for i, value in enumerate(col.to_pylist()):
            try:
                values.append(convert(value, ctype))
            except (ValueError, TypeError, OverflowError) as exc:
                values.append(None)
                errors.setdefault(i, f"column {name!r} ({ctype}): {exc}")
        arrays.append(pa.array(values, arrow_type(ctype)))
    return Shaped(pa.Table.from_arrays(arrays, names=table.column_names), errors)


def _check_integer_range(
    col: pa.ChunkedArray, name: str, column: CHType, errors: dict[int, str]
) -> pa.ChunkedArray | pa.Array:
    """`col` unchanged when every integer fits `column`'s range (one vectorised min/max);
    else the misfits are reported in `errors` and nulled (their rows are left out)."""
    family = column.inner.name
    if family not in _INT_RANGE or not pa.types.is_integer(col.type) or col.null_count == len(col):
        return col
    low, high = _INT_RANGE[family]
    bounds = pc.min_max(col)
    if low <= bounds["min"].as_py() and bounds["max"].as_py() <= high:
        return col
    values = col.to_pylist()
    for i, value in enumerate(values):
        if value is not None and not low <= value <= high:
            errors.setdefault(
                i, f"column {name!r} ({column}): {value} is out of range for {family}"
            )
            values[i] = None
    return pa.array(values, col.type)


def convert(value: Any, column: CHType) -> Any:
    """One value (as the pipeline holds it: JSON text, a list, map pairs, a scalar) in the
    Python form `arrow_type(column)` takes; ValueError/TypeError say why it does not fit."""
    if value is None:
        return None
    t = column.inner
    name = t.name
    types = [a for a in t.args if isinstance(a, CHType)]
    if name in TIME_FAMILIES:
        moment = value if isinstance(value, datetime) else parse_timestamp(value)
        return moment.date() if name in ("Date", "Date32") else moment
    if name == "Array":
        items = _json(value, list, "an array")
        return [convert(v, types[0]) for v in items]
    if name == "Map":
        pairs = _pairs(value)
        return [(convert(k, types[0]), convert(v, types[1])) for k, v in pairs]
    if name == "Tuple":
        return _tuple(value, t, types)
    if name in _INT_RANGE:
        number = _integer(value)
        low, high = _INT_RANGE[name]
        if not low <= number <= high:
            raise ValueError(f"{number} is out of range for {name}")
        return number if name in _SMALL_INTS or name in _SMALL_UINTS else str(number)
    if name in _FLOATS:
        if isinstance(value, bool):
            raise TypeError("expected a number, got a boolean")
        return float(value)
    if name == "Bool":
        return _boolean(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        value = dict(value)  # a map field's pairs, as a JSON object
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _precision(t: CHType) -> int:
    literals = [a for a in t.args if isinstance(a, str)]
    return int(literals[0]) if literals and literals[0].lstrip("-").isdigit() else 3


def _member(t: CHType, index: int) -> str:
    return t.element or str(index + 1)


def _json(value: Any, kind: type, what: str) -> Any:
    """A structured value, reading JSON text when the pipeline carried it as text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{_short(value)} is not JSON ({exc.msg})") from None
    if not isinstance(value, kind):
        raise TypeError(f"expected {what}, got {json_kind(value)}")
    return value


def _pairs(value: Any) -> list[tuple[Any, Any]]:
    """A map's entries: from a JSON object (text or parsed) or Arrow map pairs."""
    if isinstance(value, list) and all(isinstance(p, tuple) for p in value):
        return value
    return list(_json(value, dict, "an object").items())


def _tuple(value: Any, t: CHType, types: list[CHType]) -> dict[str, Any]:
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        value = dict(value)  # a map field's pairs
    value = _json(value, (dict, list), "an object or an array")  # type: ignore[arg-type]
    if isinstance(value, list):
        if len(value) != len(types):
            raise ValueError(f"{t} has {len(types)} elements, got an array of {len(value)}")
        return {
            _member(a, i): convert(v, a) for i, (a, v) in enumerate(zip(types, value, strict=True))
        }
    if not all(a.element for a in types):
        raise TypeError(f"an unnamed {t} takes an array, got an object")
    unknown = sorted(set(value) - {a.element for a in types})
    if unknown:
        raise ValueError(f"{t} has no element {unknown[0]!r}")
    return {a.element: convert(value.get(a.element), a) for a in types if a.element}


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("expected an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise ValueError(f"{value} is not an integer")
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"{_short(value)} is not an integer") from None
    raise TypeError(f"expected an integer, got {json_kind(value)}")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError(f"{_short(value)} is not a boolean")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
