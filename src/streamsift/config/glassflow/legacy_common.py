"""What GlassFlow v1 and v2 documents share between the one-topic path and the join path.

Refusals, topic ids, per-topic dedup, where the schema fields are (v1 `topic.schema`, v2
top-level `schema.fields`), and the ClickHouse sink (flat or nested connection, base64 password).
"""

from __future__ import annotations

from typing import Any

from streamsift.config.errors import ConfigError
from streamsift.config.glassflow.clickhouse import Column, check_sink_type, read_sink
from streamsift.config.glassflow.dedup import read_dedup
from streamsift.config.glassflow.joins import join_enabled
from streamsift.config.glassflow.kafka import refuse_source_extras, refuse_source_kind
from streamsift.config.glassflow.reader import Reader, blank
from streamsift.config.glassflow.schema import Field


def refuse_legacy(r: Reader) -> None:
    """ConfigError for the v1/v2 shapes streamsift does not run yet (nothing dropped silently)."""
    refused: list[str] = []
    joined = join_enabled(r.doc)
    source = r.doc.get("source")
    if isinstance(source, dict):
        refused.extend(refuse_source_kind(source.get("type"), "source"))
        if str(source.get("type", "")).strip().lower().startswith("otlp"):
            refused.append(
                "source.type: OTLP sources are read from v3 documents (version: v3); "
                f"this one is {r.version}"
            )
        topics = source.get("topics")
        if isinstance(topics, list):
            for i, topic in enumerate(topics):
                if isinstance(topic, dict):
                    refused.extend(refuse_source_extras(topic, f"source.topics[{i}]"))
            if len(topics) > 1 and not joined:
                refused.append(
                    f"source.topics: pipelines with {len(topics)} topics are not supported yet; "
                    "streamsift reads one Kafka topic per pipeline"
                )
    for key in ("filter", "stateless_transformation"):
        block = r.doc.get(key)
        if joined and isinstance(block, dict) and block.get("enabled"):
            refused.append(
                f"{key}: filter/stateless transforms are not supported with join "
                "(GlassFlow's own rule)"
            )
    if refused:
        raise ConfigError(refused)


def topic_source_id(topic: object) -> str:
    """The id a v1/v2 topic is referred to by (`source_id` elsewhere): its `id`, else its name."""
    if not isinstance(topic, dict):
        return ""
    return str(topic.get("id") or topic.get("name") or "").strip()


def topic_dedup(
    r: Reader, holder: dict[str, Any], hpath: str, fields: dict[str, Field], source_id: str
) -> dict[str, Any] | None:
    """Our `dedup` from an enabled `deduplication {key or id_field, time_window}` block."""
    key_name = "key" if not blank(holder.get("key")) else "id_field"
    key = r.text(
        holder,
        key_name,
        f"{hpath}.{key_name}",
        empty="deduplication key (id_field) cannot be empty",
    )
    return read_dedup(r, key, f"{hpath}.{key_name}", holder, hpath, fields, source_id)


def enabled(block: object) -> bool:
    """A `{enabled: true, ...}` block."""
    return isinstance(block, dict) and bool(block.get("enabled"))


def legacy_schema_fields(
    r: Reader, topic: dict[str, Any], tpath: str, topic_id: str, *, joined: bool = False
) -> tuple[list[Any] | None, list[str], str]:
    """Schema entries: v3-style `schema_fields`, v2 top-level `schema.fields`, or v1 `topic.schema`.

    With `joined`, the v2 top-level entries are those whose `source_id` is `topic_id`
    (the others are checked once, by `check_join_schema_sources`).
    """
    if isinstance(topic.get("schema_fields"), list):
        raw = topic["schema_fields"]
        return (
            raw,
            [f"{tpath}.schema_fields[{i}]" for i in range(len(raw))],
            f"{tpath}.schema_fields",
        )
    top = r.doc.get("schema")
    if isinstance(top, dict) and isinstance(top.get("fields"), list) and joined:
        raw, paths = [], []
        for i, entry in enumerate(top["fields"]):
            if isinstance(entry, dict) and entry.get("source_id") == topic_id:
                raw.append(entry)
                paths.append(f"schema.fields[{i}]")
        if not raw:
            r.problem(
                "schema.fields",
                f"no field has source_id {topic_id!r}: declare the fields of both topics",
            )
            return None, [], "schema.fields"
        return raw, paths, "schema.fields"
    if isinstance(top, dict) and isinstance(top.get("fields"), list):
        raw, paths = [], []
        for i, entry in enumerate(top["fields"]):
            ref = entry.get("source_id") if isinstance(entry, dict) else None
            if not blank(ref) and ref != topic_id:
                r.problem(
                    f"schema.fields[{i}].source_id",
                    f"{ref!r} is not a source of this pipeline (sources: {topic_id!r})",
                )
            raw.append(entry)
            paths.append(f"schema.fields[{i}]")
        return raw, paths, "schema.fields"
    inner = topic.get("schema")
    if isinstance(inner, dict) and isinstance(inner.get("fields"), list):
        kind = inner.get("type")
        if kind not in (None, "") and str(kind).strip().lower() != "json":
            r.problem(f"{tpath}.schema.type", f"{kind!r} schemas are not supported; only json")
        raw = inner["fields"]
        return (
            raw,
            [f"{tpath}.schema.fields[{i}]" for i in range(len(raw))],
            f"{tpath}.schema.fields",
        )
    where = "schema.fields" if r.version == "v2" else f"{tpath}.schema.fields"
    r.problem(
        where,
        "required field is missing: streamsift needs the message schema (field names and types)",
    )
    return None, [], where


def legacy_sink_connection(r: Reader, sink: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The sink type check, and where the ClickHouse connection keys are (nested or flat)."""
    check_sink_type(r, sink)
    if isinstance(sink.get("connection_params"), dict):
        return sink["connection_params"], "sink.connection_params"
    return sink, "sink"


def schema_columns(entries: list[Any], *, named_by_column: bool) -> list[Column]:
    """Sink columns from the v2 top-level `schema.fields` that have a `column_name`.

    The field written is the entry's `name`, or with `named_by_column` (a join's output,
    already renamed) its `column_name`.
    """
    columns = []
    for j, entry in enumerate(entries):
        if not isinstance(entry, dict) or blank(entry.get("column_name")):
            continue
        column = entry["column_name"]
        if named_by_column:
            field, field_key = (
                (column.strip() if isinstance(column, str) else column),
                "column_name",
            )
        else:
            field, field_key = entry.get("name"), "name"
        columns.append(
            Column(
                field=field,
                column=column,
                type=entry.get("column_type"),
                path=f"schema.fields[{j}]",
                field_key=field_key,
                column_key="column_name",
                type_key="column_type",
            )
        )
    return columns


def legacy_clickhouse_sink(
    r: Reader,
    sink: dict[str, Any],
    conn: dict[str, Any],
    conn_path: str,
    columns: list[Column],
    container: str,
    fields: dict[str, Field],
    source_id: str,
) -> dict[str, Any]:
    """Our `sink` from a v1/v2 sink (base64 password); `container` is where the mapping was."""
    r.origin("sink.mapping", container)
    return read_sink(
        r,
        sink,
        conn,
        conn_path,
        columns,
        fields,
        source_id,
        base64_password=True,
        empty_mapping=container,
    )
