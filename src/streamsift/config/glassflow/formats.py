"""GlassFlow's Avro and Protobuf sources (`format`, `schema`, `schema_registry`) read as ours.

GlassFlow decodes Confluent wire-format messages with the writer's schema from a registry
(`schema_registry {url, api_key, api_secret}`), given a seed `schema` for the fields: an
Avro `.avsc` object, or `.proto` text with the root message `name`. streamsift does the same
with `source.format` and `source.schema_registry` (api_key/api_secret as username/password).
The fields come from `schema_fields`, else from the Avro seed; otherwise (Protobuf: no
`.proto` compiler here) runtime fills `schema_fields` in from the registry's latest schema of
the topic's value subject before the file is converted (engine/registry_fields.py): this
module does no I/O. GlassFlow's inline mode without a registry is refused: streamsift reads
schemas from a registry only.
"""

from __future__ import annotations

from typing import Any

from streamsift.config.glassflow.reader import Reader
from streamsift.config.registry_schemas import RegistryError, avro_fields

FORMATS = ("json", "avro", "protobuf")


def source_format(src: dict[str, Any]) -> str:
    return str(src.get("format") or "json").strip().lower()


def refuse_format(src: dict[str, Any], path: str) -> list[str]:
    """The refusals of a format streamsift does not read, or one without a registry."""
    fmt = source_format(src)
    if fmt not in FORMATS:
        return [
            f"{path}.format: {src.get('format')!r} messages are not supported; use json, avro or protobuf"
        ]
    registry = src.get("schema_registry")
    if fmt != "json" and not (isinstance(registry, dict) and registry.get("url")):
        return [
            f"{path}.schema_registry: streamsift reads {fmt} messages with schemas from a "
            "Confluent-compatible schema registry; add schema_registry {url, api_key, api_secret}"
        ]
    if fmt == "json" and registry not in (None, {}, ""):
        return [f"{path}.schema_registry: used only with format avro or protobuf"]
    return []


def registry_source(
    r: Reader, src: dict[str, Any], path: str, source: dict[str, Any]
) -> list[Any] | None:
    """Set `format` and `schema_registry` on our `source`; the seed's fields as GlassFlow
    `{name, type}` entries (None when `schema_fields` lists them; [] when nothing can be
    read, a problem said)."""
    fmt = source_format(src)
    registry = src["schema_registry"]
    ours: dict[str, Any] = {"url": str(registry["url"]).strip()}
    if registry.get("api_key"):
        ours["username"] = str(registry["api_key"])
    if registry.get("api_secret"):
        ours["password"] = str(registry["api_secret"])
    source["format"] = fmt
    source["schema_registry"] = ours
    r.origin("source.format", f"{path}.format")
    r.origin("source.schema_registry", f"{path}.schema_registry")
    if src.get("schema_fields"):
        return None
    seed = src.get("schema")
    if not (fmt == "avro" and isinstance(seed, dict) and seed.get("type") == "record"):
        r.problem(
            f"{path}.schema_fields",
            f"list the fields, or give the file to streamsift validate, run or serve, which "
            f"read them from the registry's {src.get('topic')}-value subject",
        )
        return []
    try:
        derived = avro_fields(seed)
    except RegistryError as exc:
        r.problem(f"{path}.schema", exc.message)
        return []
    return [{"name": name, "type": ftype.value} for name, ftype in derived]
