"""Schema drift: fields a message has that the pipeline's schema does not list.

With `sink.on_new_fields` other than `ignore`, the parse step flags each record holding such
fields (after dedup, so duplicates are still recognised) with a reason that starts with
`NEW_FIELDS`. Under `dlq` that reason sends the record to the DLQ; under `add_columns` the
sink adds a Nullable column per new field (engine/new_columns.py) and writes the record.

A new field is a leaf of the message's objects (a scalar or an array, at any depth of
objects; arrays are not entered) whose dot path is not a schema field, with a non-null
value. Its type is inferred from that value: the JSON kind, nothing guessed from text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.types import FieldType

NEW_FIELDS = "fields not in the schema: "

# JSON kind -> (field type, ClickHouse column type) of an added column
_SCALARS: dict[str, tuple[FieldType, str]] = {
    "string": (FieldType.STRING, "Nullable(String)"),
    "int": (FieldType.INT, "Nullable(Int64)"),
    "float": (FieldType.FLOAT, "Nullable(Float64)"),
    "bool": (FieldType.BOOL, "Nullable(Bool)"),
}
_ELEMENTS = {"string": "String", "int": "Int64", "float": "Float64", "bool": "Bool"}


def kind_of(value: Any) -> str:
    """`string`, `int`, `float`, `bool`, `array[<kind>]` or `object`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        first = next((v for v in value if v is not None), None)
        return f"array[{'string' if first is None else kind_of(first)}]"
    return "object"


def column_type_of(kind: str) -> tuple[FieldType, str]:
    """The field type and the Nullable ClickHouse column type for a JSON kind."""
    if kind in _SCALARS:
        return _SCALARS[kind]
    element = _ELEMENTS.get(kind.removeprefix("array[").removesuffix("]"), "String")
    return FieldType.ARRAY, f"Array(Nullable({element}))"


def unknown_fields(doc: dict[str, Any], known: frozenset[str], prefix: str = "") -> dict[str, str]:
    """Dot paths (with their JSON kind) of `doc`'s non-null leaves no schema field names."""
    found: dict[str, str] = {}
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if value is None or path in known:
            continue
        if isinstance(value, dict):
            found.update(unknown_fields(value, known, f"{path}."))
        else:
            found[path] = kind_of(value)
    return found


def flag_new_fields(
    values: Sequence[bytes | None],
    errors: list[str | None],
    keep: Sequence[bool],
    known: frozenset[str],
) -> None:
    """Set the reason of each kept, so far good record that holds new fields."""
    for i, raw in enumerate(values):
        if errors[i] is not None or not keep[i] or raw is None:
            continue
        doc = json.loads(raw)
        found = unknown_fields(doc, known) if isinstance(doc, dict) else {}
        if found:
            errors[i] = NEW_FIELDS + ", ".join(f"{p} ({k})" for p, k in sorted(found.items()))


FLAGGED_COLUMNS = ("_topic", "_partition", "_offset", "_raw")  # what drift reads of a flagged row


def is_flagged(batch: pa.Table | pa.RecordBatch) -> pa.Array:
    """Which rows carry new fields (their `_error` starts with NEW_FIELDS)."""
    return pc.fill_null(pc.starts_with(batch.column("_error"), NEW_FIELDS), False)
