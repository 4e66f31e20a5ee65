"""GlassFlow v1 and v2 documents (`source.topics[]`, v2's top-level `schema`, `filter`, ...)."""

from __future__ import annotations

from typing import Any

from streamsift.config.glassflow.clickhouse import mapping_columns
from streamsift.config.glassflow.document import single_source_document
from streamsift.config.glassflow.kafka import kafka_source
from streamsift.config.glassflow.legacy_common import (
    enabled,
    legacy_clickhouse_sink,
    legacy_schema_fields,
    legacy_sink_connection,
    schema_columns,
    topic_dedup,
    topic_source_id,
)
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field, read_schema
from streamsift.config.glassflow.transforms import read_filter, read_stateless


def convert_legacy(r: Reader, name: str, create_table: bool) -> dict[str, Any]:
    """Our document for a v1/v2 pipeline of one topic (ConfigError listing every problem)."""
    source, fields, dedup, topic_id = legacy_source_and_dedup(r)
    extras: dict[str, Any] = {}
    legacy_expressions(r, fields, topic_id, extras)
    sink = legacy_sink(r, fields, topic_id)
    return single_source_document(r, name, source, dedup, extras, sink, create_table)


def legacy_source_and_dedup(
    r: Reader,
) -> tuple[dict[str, Any], dict[str, Field], dict[str, Any] | None, str]:
    """The one topic as our source, and its dedup (on the topic, or on `source`)."""
    src = r.obj(r.doc, "source", "source", required=True)
    if src is None:
        r.fail_if_problems()
    assert src is not None
    topics = r.array(src, "topics", "source.topics", required=True)
    if topics is not None and not topics:
        r.problem("source.topics", "at least one topic is required")
    topic = topics[0] if topics else None
    if not isinstance(topic, dict):
        if topic is not None:
            r.problem("source.topics[0]", "must be an object")
        r.fail_if_problems()
        return {}, {}, None, ""
    tpath = "source.topics[0]"
    conn = r.obj(src, "connection_params", "source.connection_params", required=True)
    tid = topic_source_id(topic)
    source = kafka_source(r, conn, "source.connection_params", topic, tpath, "name", None)
    raw, paths, container = legacy_schema_fields(r, topic, tpath, tid)
    source["schema"], fields = read_schema(r, raw, paths, container)
    dedup = None
    holder, hpath = topic.get("deduplication"), f"{tpath}.deduplication"
    if not enabled(holder):
        holder, hpath = src.get("deduplication"), "source.deduplication"
    if enabled(holder):
        dedup = topic_dedup(r, holder, hpath, fields, tid)
    return source, fields, dedup, tid


def legacy_expressions(
    r: Reader, fields: dict[str, Field], topic_id: str, extras: dict[str, Any]
) -> None:
    """v2's top-level `filter` and `stateless_transformation`, on the pipeline's one topic."""
    filt = r.obj(r.doc, "filter", "filter", required=False)
    if filt is not None and r.flag(filt, "enabled", "filter.enabled"):
        read_filter(r, filt, "filter", extras)
    path = "stateless_transformation"
    block = r.obj(r.doc, path, path, required=False)
    if block is None or not r.flag(block, "enabled", f"{path}.enabled"):
        return
    kind = r.text(block, "type", f"{path}.type")
    if kind is not None and kind.lower() != "expr_lang_transform":
        r.problem(
            f"{path}.type",
            f"unsupported stateless transformation type {kind!r}; only expr_lang_transform",
        )
    ref = r.text(block, "source_id", f"{path}.source_id")
    if ref is not None and ref != topic_id:
        r.problem(
            f"{path}.source_id",
            f"{ref!r} is not a source of this pipeline (sources: {topic_id!r})",
        )
    read_stateless(r, block, path, "transform", fields, extras)


def legacy_sink(r: Reader, fields: dict[str, Field], topic_id: str) -> dict[str, Any] | None:
    """Our `sink`, mapped by `sink.mapping`, v1 `sink.table_mapping` or v2 `schema.fields`."""
    sink = r.obj(r.doc, "sink", "sink", required=True)
    if sink is None:
        return None
    conn, conn_path = legacy_sink_connection(r, sink)
    if isinstance(sink.get("mapping"), list) and sink["mapping"]:
        container = "sink.mapping"
        columns = mapping_columns(r, sink["mapping"], container)
    elif isinstance(sink.get("table_mapping"), list) and sink["table_mapping"]:
        container = "sink.table_mapping"
        columns = mapping_columns(r, sink["table_mapping"], container, "field_name")
    else:
        container = "schema.fields" if r.version == "v2" else "sink.table_mapping"
        top = r.doc.get("schema")
        entries = top.get("fields") if isinstance(top, dict) else None
        columns = schema_columns(
            entries if isinstance(entries, list) else [], named_by_column=False
        )
    return legacy_clickhouse_sink(r, sink, conn, conn_path, columns, container, fields, topic_id)
