"""Our pipeline document assembled from the read parts: name, source, dedup, sink and notes."""

from __future__ import annotations

import re
from typing import Any

from streamsift.config.glassflow.reader import Reader

MIN_PIPELINE_ID_LENGTH = 5
"""GlassFlow's `MinPipelineIDLength`."""

# Top-level keys that carry nothing streamsift can use (display name, tags, k8s sizing, export info).
_IGNORED_KEYS = (
    "name",
    "metadata",
    "resources",
    "pipeline_resources",
    "exported_at",
    "exported_by",
)


def pipeline_name(r: Reader) -> str:
    """Our `name` from `pipeline_id` (letters, digits, _ and - only), noting what is dropped."""
    raw = r.text(r.doc, "pipeline_id", "pipeline_id", empty="required field is missing")
    r.origin("name", "pipeline_id")
    if raw is None:
        return ""
    if len(raw) < MIN_PIPELINE_ID_LENGTH:
        r.problem(
            "pipeline_id", f"pipeline ID must be at least {MIN_PIPELINE_ID_LENGTH} characters"
        )
    name = re.sub(r"[^A-Za-z0-9_\-]+", "-", raw)
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:100].rstrip("-")
    if not name:
        r.problem("pipeline_id", f"{raw!r} has no letters or digits to name the pipeline after")
    elif name != raw:
        r.notes.append(
            f"pipeline_id {raw!r} became the name {name!r} (letters, digits, _ and - only)"
        )
    for key in _IGNORED_KEYS:
        if r.doc.get(key) not in (None, "", {}, []):
            r.notes.append(f"GlassFlow's {key!r} has no streamsift equivalent and was not imported")
    return name


def add_notes(r: Reader, has_dedup: bool, create_table: bool) -> None:
    """The notes every import gets: dedup on Kafka time, and whether the table is created."""
    if has_dedup:
        r.notes.append(
            "GlassFlow deduplicates on processing time; this pipeline sets no source.schema.event_time, "
            "so streamsift windows on each message's Kafka timestamp. Name a timestamp field in "
            "source.schema.event_time to window on event time instead"
        )
    if not create_table:
        r.notes.append(
            "create_table is false: GlassFlow expects the ClickHouse table to exist. "
            "Set it to true to let streamsift create the table"
        )


def sink_section(sink: dict[str, Any], create_table: bool) -> dict[str, Any]:
    """Our `sink` with `create_table` right after `table`, where readers look for it."""
    out: dict[str, Any] = {}
    for key, value in sink.items():
        out[key] = value
        if key == "table":
            out["create_table"] = create_table
    return out


def single_source_document(
    r: Reader,
    name: str,
    source: dict[str, Any],
    dedup: dict[str, Any] | None,
    extras: dict[str, Any],
    sink: dict[str, Any] | None,
    create_table: bool,
) -> dict[str, Any]:
    """Our one-source pipeline (ConfigError if any problem was found while reading)."""
    r.fail_if_problems()
    document: dict[str, Any] = {"version": 1, "name": name, "source": source}
    if dedup is not None:
        document["dedup"] = dedup
    document.update(extras)
    assert sink is not None  # no problems means the sink was read
    document["sink"] = sink_section(sink, create_table)
    add_notes(r, dedup is not None, create_table)
    return document
