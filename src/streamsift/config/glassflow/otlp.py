"""GlassFlow OTLP sources (`type: otlp.logs | otlp.traces | otlp.metrics`) read as our OTLP
`source`: no connection, topic or schema (the record's fields are predefined); the mapping may
read one attribute as `<map>.<key>` (`resource_attributes.service.name`), and so may a dedup
key (`attributes.measurement_id`).

Also the shape GlassFlow's observability demos use: `version: v3` with a v2-style `source
{type, id, deduplication}`, read as `sources[0]` plus a dedup transform.
"""

from __future__ import annotations

from typing import Any

from streamsift.config.glassflow.dedup import composite_key
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.schema import Field
from streamsift.config.otlp import OTLP_FIELDS, OtlpSignal, otlp_field_type

_NOT_FOR_OTLP = ("connection_params", "topic", "schema_fields", "schema_registry")


def otlp_signal(kind: object) -> OtlpSignal | None:
    """The signal of a source `type`, or None when it is not an OTLP type we know."""
    try:
        return OtlpSignal(str(kind or "").strip().lower())
    except ValueError:
        return None


def is_otlp_source(src: object) -> bool:
    return isinstance(src, dict) and str(src.get("type", "")).strip().lower().startswith("otlp")


def with_v3_sources(doc: dict[str, Any]) -> dict[str, Any]:
    """A v3 document whose OTLP source is written v2-style (`source`) with `sources[]`."""
    src = doc.get("source")
    if "sources" in doc or not is_otlp_source(src):
        return doc
    assert isinstance(src, dict)
    source_id = str(src.get("id") or src.get("source_id") or src.get("type")).strip()
    out = {k: v for k, v in doc.items() if k != "source"}
    out["sources"] = [{"type": src.get("type"), "source_id": source_id}]
    dedup = src.get("deduplication")
    if isinstance(dedup, dict) and dedup.get("enabled"):
        config = {k: dedup[k] for k in ("key", "time_window") if k in dedup}
        out["transforms"] = [
            *(doc.get("transforms") or []),
            {"type": "dedup", "source_id": source_id, "config": config},
        ]
    return out


def otlp_source(
    r: Reader, src: dict[str, Any], path: str, source_id: str | None
) -> tuple[dict[str, Any], dict[str, Field]]:
    """Our OTLP `source` and the fields its records offer (those the mapping reads included)."""
    signal = otlp_signal(src.get("type"))
    if signal is None:
        r.problem(
            f"{path}.type",
            f"unsupported source type {src.get('type')!r}; use otlp.logs, otlp.traces or "
            "otlp.metrics",
        )
        return {}, {}
    for key in _NOT_FOR_OTLP:
        if src.get(key) not in (None, "", [], {}):
            r.problem(f"{path}.{key}", f"an OTLP source must not declare {key}")
    source: dict[str, Any] = {"type": signal.value}
    if source_id:
        source["name"] = source_id
    r.origin("source", path)
    fields = {
        name: Field(name, ftype, f"{path}.type") for name, ftype in OTLP_FIELDS[signal].items()
    }
    extra = []
    for name in _fields_read(r.doc):
        if name not in fields:
            ftype = otlp_field_type(signal, name.strip())
            if ftype is not None:
                fields[name.strip()] = Field(name.strip(), ftype, f"{path}.type")
                extra.append({"name": name.strip(), "type": ftype.value})
    if extra:
        base = [{"name": n, "type": t.value} for n, t in OTLP_FIELDS[signal].items()]
        source["schema"] = {"fields": base + extra}
    return source, fields


def _fields_read(doc: dict[str, Any]) -> list[str]:
    """The record fields the sink mapping and the dedup keys name (`attributes.id` included)."""
    sink = doc.get("sink")
    mapping = sink.get("mapping") if isinstance(sink, dict) else None
    names = (
        [e.get("name") for e in mapping if isinstance(e, dict)] if isinstance(mapping, list) else []
    )
    transforms = doc.get("transforms")
    for tr in transforms if isinstance(transforms, list) else ():
        config = tr.get("config") if isinstance(tr, dict) else None
        if str(tr.get("type", "")).strip().lower() == "dedup" and isinstance(config, dict):
            key = config.get("key")
            if isinstance(key, str):
                names.extend(composite_key(key) or [key])
    return [n.strip() for n in names if isinstance(n, str)]
