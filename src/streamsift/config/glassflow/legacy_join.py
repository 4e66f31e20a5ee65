"""GlassFlow v1/v2 joins: two topics (each with its own dedup) and `join.sources[]`.

One `join.sources` entry has `orientation: left`, the other `right`. The join's output fields
are the v2 top-level `schema.fields` (named by their `column_name`, else their `name`) or the
v1 `sink.table_mapping` entries (named by their `column_name`).
"""

from __future__ import annotations

from typing import Any

from streamsift.config.glassflow.clickhouse import Column, mapping_columns
from streamsift.config.glassflow.dedup import check_window
from streamsift.config.glassflow.joins import (
    add_join_output,
    check_join_type,
    join_document,
    join_side,
)
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
from streamsift.config.glassflow.reader import Reader, blank
from streamsift.config.glassflow.schema import Field, read_field_type, read_schema


def legacy_join(r: Reader, name: str, create_table: bool) -> dict[str, Any]:
    """Our join pipeline from a v1/v2 join (ConfigError listing every problem)."""
    src = r.obj(r.doc, "source", "source", required=True)
    if src is None:
        r.fail_if_problems()
    assert src is not None
    topics = r.array(src, "topics", "source.topics", required=True) or []
    if len(topics) != 2:
        r.problem("source.topics", "join.enabled=true requires exactly two kafka sources")
        r.fail_if_problems()
    conn = r.obj(src, "connection_params", "source.connection_params", required=True)
    ids = [topic_source_id(t) for t in topics]
    if ids[0] and ids[0] == ids[1]:
        r.problem("source.topics[1].name", f"both topics are {ids[0]!r}; a join reads two topics")
    check_join_schema_sources(r, ids)
    if enabled(src.get("deduplication")):
        r.problem(
            "source.deduplication",
            "with two topics, deduplication goes on each topic (source.topics[i].deduplication)",
        )
    ours: dict[str, dict[str, Any]] = {}
    schemas: dict[str, dict[str, Field]] = {}
    origins: dict[str, dict[str, str]] = {}
    for i, tpath, topic in r.objects(topics, "source.topics"):
        sid = ids[i]
        source = kafka_source(
            r, conn, "source.connection_params", topic, tpath, "name", sid or None
        )
        raw, paths, container = legacy_schema_fields(r, topic, tpath, sid, joined=True)
        source["schema"], fields = read_schema(r, raw, paths, container)
        holder = topic.get("deduplication")
        if enabled(holder):
            dedup = topic_dedup(r, holder, f"{tpath}.deduplication", fields, sid)
            if dedup is not None:
                source["dedup"] = dedup
        origins[sid] = take_source_origins(r)
        if sid:
            ours[sid], schemas[sid] = source, fields
    sides = legacy_join_sides(r, ours, schemas)
    for position, side in enumerate(("left", "right")):  # our sources[0] is the left one
        for key, theirs in origins.get(sides.get(side, {}).get("source") or "", {}).items():
            r.origin(f"sources[{position}]{key}", theirs)
    output, out_fields, columns, container = legacy_join_output(r, sides, schemas)
    r.fail_if_problems()
    sink = r.obj(r.doc, "sink", "sink", required=True)
    if sink is not None:
        sink_conn, conn_path = legacy_sink_connection(r, sink)
        sink = legacy_clickhouse_sink(
            r, sink, sink_conn, conn_path, columns, container, out_fields, f"{name}-join"
        )
    r.fail_if_problems()
    assert sink is not None
    return join_document(r, name, ours, sides, output, sink, create_table)


def take_source_origins(r: Reader) -> dict[str, str]:
    """Remove and return the origins of the source just read (`source…` and `dedup…`),
    keyed by what follows `source` (`.topic`, `.dedup.key`, ...), to file under its index
    among our `sources` once the join's orientation is known."""
    taken: dict[str, str] = {}
    for key in list(r.origins):
        if key == "source" or key.startswith("source."):
            taken[key[len("source") :]] = r.origins.pop(key)
        elif key == "dedup" or key.startswith("dedup."):
            taken[f".{key}"] = r.origins.pop(key)
    return taken


def check_join_schema_sources(r: Reader, ids: list[str]) -> None:
    """Each v2 top-level schema field of a join names one of the two topics."""
    top = r.doc.get("schema")
    if not isinstance(top, dict) or not isinstance(top.get("fields"), list):
        return
    known = ", ".join(repr(i) for i in ids)
    for j, entry in enumerate(top["fields"]):
        if not isinstance(entry, dict):
            continue  # reported where the schema is read
        ref = entry.get("source_id")
        if blank(ref):
            r.problem(
                f"schema.fields[{j}].source_id",
                f"source_id cannot be empty with a join: name the topic ({known})",
            )
        elif not isinstance(ref, str) or ref not in ids:
            r.problem(
                f"schema.fields[{j}].source_id",
                f"{ref!r} is not a source of this pipeline (sources: {known})",
            )


def legacy_join_sides(
    r: Reader, ours: dict[str, dict[str, Any]], schemas: dict[str, dict[str, Field]]
) -> dict[str, dict[str, Any]]:
    """Our `join.left` and `join.right` from v1/v2 `join.sources[]` (by `orientation`)."""
    join = r.doc["join"]
    check_join_type(r, join)
    entries = r.array(join, "sources", "join.sources", required=True) or []
    known = ", ".join(repr(i) for i in ours)
    sides: dict[str, dict[str, Any]] = {}
    oriented: list[str] = []
    shape = "{source_id, join_key, time_window, orientation}"
    for _, jpath, spec in r.objects(entries, "join.sources", shape):
        orientation = str(spec.get("orientation") or "").strip().lower()
        if orientation not in ("left", "right"):
            r.problem(
                f"{jpath}.orientation", f"must be left or right, got {spec.get('orientation')!r}"
            )
            continue
        oriented.append(orientation)
        if orientation in sides:
            continue  # reported below
        sid = r.text(spec, "source_id", f"{jpath}.source_id", empty="source_id is empty")
        # GlassFlow reads join_key; a 2026-03 variant of v2 wrote key.
        key_name = "key" if blank(spec.get("join_key")) and "key" in spec else "join_key"
        key = r.text(spec, key_name, f"{jpath}.{key_name}", empty="join key cannot be empty")
        window = r.duration(spec, "time_window", f"{jpath}.time_window")
        if sid is not None and sid not in ours:
            r.problem(f"{jpath}.source_id", f"unknown source_id {sid!r} (sources: {known})")
        elif sid is not None and key is not None:
            check_join_key(r, spec, jpath, key_name, key, sid, schemas[sid])
        check_window(r, spec, f"{jpath}.time_window", window)
        r.origin(f"join.{orientation}", jpath)
        r.origin(f"join.{orientation}.source", f"{jpath}.source_id")
        r.origin(f"join.{orientation}.key", f"{jpath}.{key_name}")
        r.origin(f"join.{orientation}.time_window", f"{jpath}.time_window")
        sides[orientation] = join_side(sid, key, window)
    if sorted(oriented) != ["left", "right"]:
        r.problem(
            "join.sources",
            "join requires exactly one left and one right source, found "
            f"{oriented.count('left')} left and {oriented.count('right')} right",
        )
    elif sides["left"]["source"] is not None and (
        sides["left"]["source"] == sides["right"]["source"]
    ):
        r.problem("join.sources", "the left and the right source must differ")
    return sides


def check_join_key(
    r: Reader,
    spec: dict[str, Any],
    jpath: str,
    key_name: str,
    key: str,
    sid: str,
    fields: dict[str, Field],
) -> None:
    """The join key is a field of its topic, of the type v1's `join_key_type` repeats."""
    field = fields.get(key)
    if field is None:
        r.problem(
            f"{jpath}.{key_name}",
            f"join key {key!r} not found in schema_fields for source {sid!r}",
        )
    elif not blank(spec.get("join_key_type")):
        declared = read_field_type(r, spec["join_key_type"], f"{jpath}.join_key_type")
        if declared is not None and field.type is not None and declared != field.type:
            r.problem(
                f"{jpath}.join_key_type",
                f"{spec['join_key_type']!r} does not match the type of {key!r} in "
                f"the schema of {sid!r} ({field.type.value})",
            )


def legacy_join_output(
    r: Reader, sides: dict[str, dict[str, Any]], schemas: dict[str, dict[str, Field]]
) -> tuple[list[dict[str, Any]], dict[str, Field], list[Column], str]:
    """The join output fields and the sink columns of a v1/v2 join.

    v2 (top-level `schema.fields`): every schema field is an output field, named by its
    `column_name` if it has one (as GlassFlow's migration does); the sink maps
    `sink.mapping` (by output name) or else the fields with a `column_name`. v1: each
    `sink.table_mapping` entry is an output field named by its `column_name`, and a column.
    """
    side_of = {v["source"]: k for k, v in sides.items() if v.get("source")}
    output: list[dict[str, Any]] = []
    out_fields: dict[str, Field] = {}

    def add(sid: object, field: str, as_: str, path: str, field_key: str) -> bool:
        side = side_of.get(sid) if isinstance(sid, str) else None
        if side is None or sid not in schemas:
            return False  # reported with the sides or the schema
        if field not in schemas[sid]:
            r.problem(
                f"{path}.{field_key}",
                f"join output field {field!r} not found in schema for source {sid!r}",
            )
            return False
        if as_ in out_fields:
            r.problem(
                path,
                f"join output name {as_!r} is used twice (also {out_fields[as_].path}); "
                "give one of them another column_name",
            )
            return False
        r.origin(f"join.output[{len(output)}]", path)
        add_join_output(output, out_fields, side, field, as_, schemas[sid][field].type, path)
        return True

    sink = r.doc.get("sink") if isinstance(r.doc.get("sink"), dict) else {}
    top = r.doc.get("schema")
    if isinstance(top, dict) and isinstance(top.get("fields"), list):
        entries = top["fields"]
        for j, entry in enumerate(entries):
            if not isinstance(entry, dict) or blank(entry.get("name")):
                continue  # reported where the schema is read
            name = str(entry["name"]).strip()
            column = entry.get("column_name")
            as_ = column.strip() if isinstance(column, str) and column.strip() else name
            add(entry.get("source_id"), name, as_, f"schema.fields[{j}]", "name")
        if isinstance(sink.get("mapping"), list) and sink["mapping"]:
            return (
                output,
                out_fields,
                mapping_columns(r, sink["mapping"], "sink.mapping"),
                "sink.mapping",
            )
        return output, out_fields, schema_columns(entries, named_by_column=True), "schema.fields"
    known = ", ".join(repr(i) for i in schemas)
    columns: list[Column] = []
    mapping = sink.get("table_mapping")
    entries = mapping if isinstance(mapping, list) else []
    shape = "{source_id, field_name, column_name, column_type}"
    for _, path, entry in r.objects(entries, "sink.table_mapping", shape):
        sid, field, column = (entry.get(k) for k in ("source_id", "field_name", "column_name"))
        if blank(sid):
            r.problem(
                f"{path}.source_id",
                f"source_id cannot be empty with a join: name the topic ({known})",
            )
            continue
        if not isinstance(sid, str) or sid not in schemas:
            r.problem(
                f"{path}.source_id",
                f"{sid!r} is not a source of this pipeline (sources: {known})",
            )
            continue
        if blank(field) or blank(column):
            r.problem(
                f"{path}.{'field_name' if blank(field) else 'column_name'}",
                f"{'field' if blank(field) else 'column'} name cannot be empty",
            )
            continue
        if add(sid, str(field).strip(), str(column).strip(), path, "field_name"):
            columns.append(
                Column(
                    field=str(column).strip(),
                    column=column,
                    type=entry.get("column_type"),
                    path=path,
                    field_key="field_name",
                    column_key="column_name",
                    type_key="column_type",
                )
            )
    return output, out_fields, columns, "sink.table_mapping"
