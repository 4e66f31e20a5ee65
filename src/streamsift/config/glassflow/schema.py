"""GlassFlow `{name, type}` schema entries read as our `source.schema`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.values import field_type
from streamsift.config.types import FieldType


@dataclass(frozen=True)
class Field:
    """A field of the message schema (or a join's output), and where GlassFlow declared it."""

    name: str
    type: FieldType | None  # None: the type was refused (reported once, not again per use)
    path: str


def read_field_type(r: Reader, value: object, path: str) -> FieldType | None:
    return r.parsed(value, path, field_type)


def read_schema(
    r: Reader, raw: list[Any] | None, paths: list[str], container: str
) -> tuple[dict[str, Any], dict[str, Field]]:
    """Our `source.schema` from GlassFlow `{name, type}` entries (paths: each entry's own)."""
    fields: dict[str, Field] = {}
    out: list[dict[str, str]] = []
    r.origin("source.schema", container)
    r.origin("source.schema.fields", container)
    for i, (entry, path) in enumerate(zip(raw or [], paths, strict=True)):
        r.origin(f"source.schema.fields[{i}]", path)
        if not isinstance(entry, dict):
            r.problem(path, "must be an object {name, type}")
            continue
        name = r.text(entry, "name", f"{path}.name", empty="field name cannot be empty")
        ftype = read_field_type(r, entry.get("type"), f"{path}.type")
        if name is None:
            continue
        if name in fields:
            r.problem(
                f"{path}.name",
                f"field {name!r} is declared twice (first at {fields[name].path})",
            )
            continue
        fields[name] = Field(name, ftype, path)
        if ftype is not None:
            out.append({"name": name, "type": ftype.value})
    if raw is not None and not raw:
        r.problem(container, "at least one schema field is required")
    return {"fields": out}, fields
