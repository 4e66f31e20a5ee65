"""The parts of a GlassFlow join read the same way from v3 and from v1/v2 documents."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from streamsift.config.durations import format_duration
from streamsift.config.glassflow.document import add_notes, sink_section
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field
from streamsift.config.types import FieldType


def join_enabled(doc: dict[str, Any]) -> bool:
    """The document has a `join` with `enabled: true`."""
    join = doc.get("join")
    return isinstance(join, dict) and bool(join.get("enabled"))


def check_join_type(r: Reader, join: dict[str, Any]) -> None:
    kind = str(join.get("type") or "temporal").strip().lower()
    if kind != "temporal":
        r.problem("join.type", "invalid join type; only temporal joins are supported")


def join_side(source_id: str | None, key: str | None, window: timedelta | None) -> dict[str, Any]:
    """Our `join.left` or `join.right`."""
    return {
        "source": source_id,
        "key": key,
        "time_window": format_duration(window) if window else None,
    }


def add_join_output(
    output: list[dict[str, Any]],
    out_fields: dict[str, Field],
    side: str,
    field: str,
    as_: str,
    ftype: FieldType | None,
    path: str,
) -> None:
    """One of our `join.output` entries, and the field it gives the sink mapping."""
    output.append({"from": side, "field": field, **({"as": as_} if as_ != field else {})})
    out_fields[as_] = Field(as_, ftype, path)


def join_document(
    r: Reader,
    name: str,
    sources: dict[str, dict[str, Any]],
    sides: dict[str, dict[str, Any]],
    output: list[dict[str, Any]],
    sink: dict[str, Any],
    create_table: bool,
) -> dict[str, Any]:
    """Our join pipeline: the left source first, an inner join of mode latest (GlassFlow's: one
    row per left record, with the newest right record of its key), the sink; with the notes."""
    document: dict[str, Any] = {
        "version": 1,
        "name": name,
        "sources": [sources[sides["left"]["source"]], sources[sides["right"]["source"]]],
        "join": {
            "type": "inner",
            "mode": "latest",
            "left": sides["left"],
            "right": sides["right"],
            "output": output,
        },
        "sink": sink_section(sink, create_table),
    }
    r.notes.append(
        "join: mode latest, as GlassFlow joins: each left record once, with the newest right "
        "record of its key; GlassFlow decides on processing time, streamsift on each source's "
        "Kafka timestamps (set schema.event_time to use a payload field), which differ only "
        "when a topic is read behind or out of order (docs/glassflow.md); type: left keeps "
        "left records without a match"
    )
    add_notes(r, any("dedup" in s for s in sources.values()), create_table)
    return document
