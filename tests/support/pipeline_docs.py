"""Pipeline documents for tests: one builder instead of a dict rebuilt in each test file.

`pipeline_doc` makes a single-source document (source, optional dedup, sink, optional
runtime) from the parts a test cares about; `join_doc` a two-source join from `join_source`s;
`event_doc` the document for the load generator's events (sample_data.schema). The results are
plain dicts, as a user would write them in YAML, so a test may still edit or dump them.
`fields` and `mapping` spell the schema and the column mapping in one line per entry.

Importable from any test module (pytest puts tests/ on sys.path for tests/conftest.py).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from streamsift.sample_data.schema import EVENT_FIELDS, EVENT_MAPPING

LOCAL_KAFKA = "127.0.0.1:9092"  # unit tests: validated, never contacted
UNUSED_CLICKHOUSE = {"path": "/tmp/unused"}  # unit tests: validated, never opened


def fields(*entries: tuple[str, str]) -> list[dict[str, str]]:
    """Schema fields from (name, type) pairs: `fields(("id", "string"), ("ts", "timestamp"))`."""
    return [{"name": name, "type": type_} for name, type_ in entries]


def mapping(*entries: tuple[str, str, str]) -> list[dict[str, str]]:
    """Sink mapping from (field, column, ClickHouse type) triples."""
    return [{"field": field, "column": column, "type": type_} for field, column, type_ in entries]


def _name_of(text: str) -> str:
    """A pipeline name from a topic or table name: `_` becomes `-`, at most 90 characters."""
    return text.replace("_", "-")[:90]


def pipeline_doc(
    *,
    topic: str = "events",
    fields: list[dict[str, Any]],
    mapping: list[dict[str, Any]],
    event_time: str | None = None,
    dedup: dict[str, Any] | None = None,
    bootstrap_servers: str = LOCAL_KAFKA,
    clickhouse: dict[str, Any] | None = None,
    table: str | None = None,
    name: str | None = None,
    checkpoint_dir: Path | str | None = None,
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    runtime: dict[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A single-source pipeline document.

    `table` defaults to the topic, `name` to the table (made a valid name), `clickhouse` to
    an embedded path that unit tests never open. `source`, `sink` and `runtime` add keys to
    those sections (e.g. `sink={"create_table": True, "order_by": ["id"]}`); a `runtime`
    section is written only with `checkpoint_dir` or `runtime`. Other keywords are top-level
    keys (`transform`, `filter`, `dlq`, `version`...).
    """
    table = table or topic
    schema: dict[str, Any] = {"fields": fields}
    if event_time is not None:
        schema["event_time"] = event_time
    doc: dict[str, Any] = {
        "name": name or _name_of(table),
        "source": {
            "bootstrap_servers": bootstrap_servers,
            "topic": topic,
            **(source or {}),
            "schema": schema,
        },
    }
    if dedup is not None:
        doc["dedup"] = dedup
    doc["sink"] = {
        "clickhouse": clickhouse if clickhouse is not None else dict(UNUSED_CLICKHOUSE),
        "table": table,
        **(sink or {}),
        "mapping": mapping,
    }
    if checkpoint_dir is not None or runtime:
        doc["runtime"] = {
            **({"checkpoint_dir": str(checkpoint_dir)} if checkpoint_dir is not None else {}),
            **(runtime or {}),
        }
    doc.update(top)
    return doc


def event(event_id: str, at: datetime, attempt: int = 0) -> dict[str, Any]:
    """One event of the generator's schema (what `event_doc`'s pipelines read), at `at`."""
    return {
        "event_id": event_id,
        "type": "view",
        "user": {"id": "u1", "name": "one"},
        "tags": [],
        "amount": 1.0,
        "attempt": attempt,
        "created_at": at.isoformat(),
    }


def event_doc(
    *,
    bootstrap_servers: str,
    topic: str,
    clickhouse: dict[str, Any],
    checkpoint_dir: Path | str,
    window: str | None = "1h",
    table: str | None = None,
    name: str | None = None,
    sink: dict[str, Any] | None = None,
    runtime: dict[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """The load generator's events (sample_data.schema) into a table of the same columns, with
    dedup on `event_id` within `window` of `created_at` (None: no dedup)."""
    return pipeline_doc(
        topic=topic,
        fields=EVENT_FIELDS,
        event_time="created_at",
        mapping=EVENT_MAPPING,
        dedup={"key": "event_id", "time_window": window} if window else None,
        bootstrap_servers=bootstrap_servers,
        clickhouse=clickhouse,
        table=table,
        name=name,
        checkpoint_dir=checkpoint_dir,
        sink={"create_table": True, **(sink or {})},
        runtime=runtime,
        **top,
    )


def join_source(
    name: str,
    topic: str,
    fields: list[dict[str, Any]],
    *,
    event_time: str | None = None,
    dedup: dict[str, Any] | None = None,
    bootstrap_servers: str = LOCAL_KAFKA,
) -> dict[str, Any]:
    """One entry of a join document's `sources`."""
    schema: dict[str, Any] = {"fields": fields}
    if event_time is not None:
        schema["event_time"] = event_time
    source: dict[str, Any] = {
        "name": name,
        "bootstrap_servers": bootstrap_servers,
        "topic": topic,
        "schema": schema,
    }
    if dedup is not None:
        source["dedup"] = dedup
    return source


def join_doc(
    *,
    name: str,
    sources: list[dict[str, Any]],
    join: dict[str, Any],
    table: str,
    mapping: list[dict[str, Any]],
    clickhouse: dict[str, Any] | None = None,
    checkpoint_dir: Path | str | None = None,
    sink: dict[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A two-source join document (see `join_source`); keywords as in `pipeline_doc`."""
    doc: dict[str, Any] = {
        "name": name,
        "sources": sources,
        "join": join,
        "sink": {
            "clickhouse": clickhouse if clickhouse is not None else dict(UNUSED_CLICKHOUSE),
            "table": table,
            **(sink or {}),
            "mapping": mapping,
        },
    }
    if checkpoint_dir is not None:
        doc["runtime"] = {"checkpoint_dir": str(checkpoint_dir)}
    doc.update(top)
    return doc
