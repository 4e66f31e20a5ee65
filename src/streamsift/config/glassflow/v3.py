"""GlassFlow v3 documents (`sources[]`, `transforms[]`, `join.left_source/right_source`)."""

from __future__ import annotations

from typing import Any

from streamsift.config.errors import ConfigError
from streamsift.config.glassflow.clickhouse import check_sink_type, mapping_columns, read_sink
from streamsift.config.glassflow.dedup import read_dedup
from streamsift.config.glassflow.document import single_source_document
from streamsift.config.glassflow.formats import registry_source, source_format
from streamsift.config.glassflow.joins import (
    add_join_output,
    check_join_type,
    join_document,
    join_enabled,
    join_side,
)
from streamsift.config.glassflow.kafka import kafka_source, refuse_source_extras, refuse_source_kind
from streamsift.config.glassflow.otlp import is_otlp_source, otlp_source
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field, read_schema
from streamsift.config.glassflow.transforms import read_filter, read_stateless


def convert_v3(r: Reader, name: str, create_table: bool) -> dict[str, Any]:
    """Our document for a v3 pipeline of one source (ConfigError listing every problem)."""
    extras: dict[str, Any] = {}
    source, fields, dedup, source_id = v3_source_and_transforms(r, extras)
    sink = v3_sink(r, fields, source_id)
    return single_source_document(r, name, source, dedup, extras, sink, create_table)


def refuse_v3(r: Reader) -> None:
    """ConfigError for the v3 shapes streamsift does not run yet (nothing is dropped silently)."""
    refused: list[str] = []
    joined = join_enabled(r.doc)
    sources = r.doc.get("sources")
    if isinstance(sources, list):
        for i, src in enumerate(sources):
            if not isinstance(src, dict):
                continue
            refused.extend(refuse_source_kind(src.get("type"), f"sources[{i}]"))
            if not is_otlp_source(src):  # otlp.py names what an OTLP source must not have
                refused.extend(refuse_source_extras(src, f"sources[{i}]", registry_ok=True))
        if len(sources) > 1 and not joined:
            refused.append(
                f"sources: pipelines with {len(sources)} sources are not supported yet; "
                "streamsift reads one Kafka topic per pipeline"
            )
    transforms = r.doc.get("transforms")
    if isinstance(transforms, list):
        for i, tr in enumerate(transforms):
            kind = str(tr.get("type", "")).strip().lower() if isinstance(tr, dict) else ""
            if kind in ("filter", "stateless") and joined:
                refused.append(
                    f"transforms[{i}].type: filter/stateless transforms are not supported "
                    "with join (GlassFlow's own rule)"
                )
    if refused:
        raise ConfigError(refused)


def v3_source(
    r: Reader, src: dict[str, Any], path: str, source_id: str | None, conn: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Field]]:
    """Our `source` (with schema) from `sources[i]`, whose id and connection the caller read."""
    source = kafka_source(r, conn, f"{path}.connection_params", src, path, "topic", source_id)
    derived = None
    if source_format(src) != "json":
        derived = registry_source(r, src, path, source)
    if derived is not None:
        raw, where = derived or None, f"{path}.schema"
        paths = [f"{where} ({entry['name']})" for entry in derived]
    else:
        raw = r.array(src, "schema_fields", f"{path}.schema_fields", required=True)
        where, paths = (
            f"{path}.schema_fields",
            [f"{path}.schema_fields[{i}]" for i in range(len(raw or []))],
        )
    source["schema"], fields = read_schema(r, raw, paths, where)
    return source, fields


def dedup_transform(
    r: Reader, config: dict[str, Any], tpath: str, fields: dict[str, Field], source_id: str
) -> dict[str, Any] | None:
    """Our `dedup` from a dedup transform's `config {key, time_window}`."""
    key = r.text(config, "key", f"{tpath}.config.key", empty="key cannot be empty")
    return read_dedup(r, key, f"{tpath}.config.key", config, f"{tpath}.config", fields, source_id)


def v3_source_and_transforms(
    r: Reader, extras: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Field], dict[str, Any] | None, str]:
    """The one source, its dedup, and its filter/stateless transforms (into `extras`)."""
    sources = r.array(r.doc, "sources", "sources", required=True)
    if sources is not None and not sources:
        r.problem("sources", "pipeline must have at least one source")
    src = sources[0] if sources else None
    if src is None or not isinstance(src, dict):
        if src is not None:
            r.problem("sources[0]", "must be an object")
        r.fail_if_problems()
        return {}, {}, None, ""
    path = "sources[0]"
    source_id = r.text(
        src, "source_id", f"{path}.source_id", empty="source at index 0 has empty source_id"
    )
    if is_otlp_source(src):
        source, fields = otlp_source(r, src, path, source_id)
    else:
        conn = r.obj(src, "connection_params", f"{path}.connection_params", required=False)
        if conn is None and "connection_params" not in src:
            r.problem(f"{path}.connection_params", "kafka source must declare connection_params")
        source, fields = v3_source(r, src, path, source_id, conn)
    dedup = None
    transforms = r.array(r.doc, "transforms", "transforms", required=False) or []
    for i, tpath, tr in r.objects(transforms, "transforms", "{type, source_id, config}"):
        kind = str(tr.get("type", "")).strip().lower()
        if kind == "filter":  # kept when true
            config = r.obj(tr, "config", f"{tpath}.config", required=True) or {}
            read_filter(r, config, f"{tpath}.config", extras)
            continue
        if kind == "stateless":
            read_stateless(r, tr, tpath, "transforms", fields, extras)
            continue
        if kind != "dedup":
            r.problem(
                f"{tpath}.type", f"transform at index {i} has unsupported type {tr.get('type')!r}"
            )
            continue
        ref = r.text(tr, "source_id", f"{tpath}.source_id", empty="source_id cannot be empty")
        if ref is not None and source_id is not None and ref != source_id:
            r.problem(
                f"{tpath}.source_id",
                f"transform at index {i} references unknown source_id {ref!r}",
            )
            continue
        if dedup is not None:
            r.problem(
                tpath, f"at most one dedup transform per source; {source_id!r} already has one"
            )
            continue
        config = r.obj(tr, "config", f"{tpath}.config", required=True)
        if config is None:
            continue
        dedup = dedup_transform(r, config, tpath, fields, source_id or "")
        if dedup is None:
            dedup = {}  # reported; keeps later duplicates detectable
    return source, fields, dedup or None, source_id or ""


def v3_sink(r: Reader, fields: dict[str, Field], source_id: str) -> dict[str, Any] | None:
    """Our `sink` from v3's `sink {connection_params, table, mapping[]}`."""
    sink = r.obj(r.doc, "sink", "sink", required=True)
    if sink is None:
        return None
    check_sink_type(r, sink)
    conn = r.obj(sink, "connection_params", "sink.connection_params", required=True)
    raw = r.array(sink, "mapping", "sink.mapping", required=True)
    columns = mapping_columns(r, raw or [], "sink.mapping")
    r.origin("sink.mapping", "sink.mapping")
    return read_sink(
        r,
        sink,
        conn,
        "sink.connection_params",
        columns,
        fields,
        source_id,
        base64_password=False,
        empty_mapping="sink.mapping",
    )


def v3_join(r: Reader, name: str, create_table: bool) -> dict[str, Any]:
    """A GlassFlow v3 join pipeline: two sources, per-source dedup, a temporal inner join."""
    sources = r.array(r.doc, "sources", "sources", required=True) or []
    if len(sources) != 2:
        r.problem("sources", "join.enabled=true requires exactly two kafka sources")
        r.fail_if_problems()
    ours: dict[str, dict[str, Any]] = {}
    schemas: dict[str, dict[str, Field]] = {}
    for _, path, src in r.objects(sources, "sources"):
        sid = r.text(src, "source_id", f"{path}.source_id", empty="source_id is empty")
        conn = r.obj(src, "connection_params", f"{path}.connection_params", required=True)
        source, fields = v3_source(r, src, path, sid, conn)
        if sid is not None:
            ours[sid], schemas[sid] = source, fields
    for i, tr in enumerate(r.array(r.doc, "transforms", "transforms", required=False) or []):
        tpath = f"transforms[{i}]"
        if not isinstance(tr, dict) or str(tr.get("type", "")).lower() != "dedup":
            r.problem(f"{tpath}.type", "only dedup transforms are imported with a join")
            continue
        sid = tr.get("source_id")
        if not isinstance(sid, str) or sid not in ours:
            r.problem(
                f"{tpath}.source_id",
                f"transform at index {i} references unknown source_id {sid!r}",
            )
            continue
        config = r.obj(tr, "config", f"{tpath}.config", required=True) or {}
        dedup = dedup_transform(r, config, tpath, schemas[sid], sid)
        if dedup is not None:
            ours[sid]["dedup"] = dedup
    sides = v3_join_sides(r, ours, schemas)
    output, out_fields = v3_join_output(r, sides, schemas)
    r.fail_if_problems()
    sink = v3_sink(r, out_fields, f"{name}-join")
    r.fail_if_problems()
    assert sink is not None
    return join_document(r, name, ours, sides, output, sink, create_table)


def v3_join_sides(
    r: Reader, ours: dict[str, dict[str, Any]], schemas: dict[str, dict[str, Field]]
) -> dict[str, dict[str, Any]]:
    """Our `join.left` and `join.right` from `join.left_source` and `join.right_source`."""
    join = r.doc["join"]
    check_join_type(r, join)
    sides: dict[str, dict[str, Any]] = {}
    for side in ("left", "right"):
        jpath = f"join.{side}_source"
        spec = r.obj(join, f"{side}_source", jpath, required=True) or {}
        sid = r.text(spec, "source_id", f"{jpath}.source_id", empty="source_id is empty")
        key = r.text(spec, "key", f"{jpath}.key", empty="join key cannot be empty")
        window = r.duration(spec, "time_window", f"{jpath}.time_window")
        if sid is not None and sid not in ours:
            r.problem(f"{jpath}.source_id", f"unknown source_id {sid!r}")
        elif sid is not None and key is not None and key not in schemas[sid]:
            r.problem(
                f"{jpath}.key", f"join key {key!r} not found in schema_fields for source {sid!r}"
            )
        if window is None:
            r.problem(f"{jpath}.time_window", "required field is missing")
        sides[side] = join_side(sid, key, window)
    return sides


def v3_join_output(
    r: Reader, sides: dict[str, dict[str, Any]], schemas: dict[str, dict[str, Field]]
) -> tuple[list[dict[str, Any]], dict[str, Field]]:
    """Our `join.output` from `join.output_fields`, and the fields it gives the sink."""
    output: list[dict[str, Any]] = []
    out_fields: dict[str, Field] = {}
    join = r.doc["join"]
    entries = r.array(join, "output_fields", "join.output_fields", required=True) or []
    shape = "{source_id, name, output_name}"
    for _, opath, entry in r.objects(entries, "join.output_fields", shape):
        sid, field = entry.get("source_id"), entry.get("name")
        side = next((k for k, v in sides.items() if v["source"] == sid), None)
        if side is None:
            r.problem(f"{opath}.source_id", f"unknown source_id {sid!r}")
            continue
        if not isinstance(field, str) or field not in schemas.get(sid, {}):
            r.problem(
                f"{opath}.name",
                f"join output field {field!r} not found in schema for source {sid!r}",
            )
            continue
        as_ = r.text(entry, "output_name", f"{opath}.output_name") or field
        add_join_output(output, out_fields, side, field, as_, schemas[sid][field].type, opath)
    return output, out_fields
