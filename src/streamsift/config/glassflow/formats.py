"""GlassFlow's Avro and Protobuf sources (`format`, `schema`, `schema_registry`) read as ours.

GlassFlow decodes Confluent wire-format messages with the writer's schema from a registry
(`schema_registry {url, api_key, api_secret}`), given a seed `schema` for the fields: an
Avro `.avsc` object, or `.proto` text with the root message `name`. streamsift does the same
with `source.format` and `source.schema_registry` (api_key/api_secret as username/password).
The fields come from the Avro seed; for Protobuf (no `.proto` compiler here) from the
registry's latest schema of the topic's value subject, read at import time. GlassFlow's
inline mode without a registry is refused: streamsift reads schemas from a registry only.
"""

from __future__ import annotations

from typing import Any

from streamsift.config.glassflow.reader import Reader
from streamsift.config.registry_client import RegistryClient, RegistryError, RegistryUnavailable
from streamsift.config.registry_schemas import avro_fields, registry_fields

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
    `{name, type}` entries (None when `schema_fields` lists them or nothing can be read)."""
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
    try:
        if fmt == "avro" and isinstance(seed, dict) and seed.get("type") == "record":
            derived = avro_fields(seed)
        else:
            client = RegistryClient(
                ours["url"].rstrip("/"), ours.get("username"), ours.get("password")
            )
            message = seed.get("name") if isinstance(seed, dict) else None
            subject = f"{src.get('topic')}-value"
            _, derived = registry_fields(client, fmt, subject, "latest", message)
            r.notes.append(
                f"{path}.schema: fields read from the registry's latest {subject} schema"
            )
    except (RegistryError, RegistryUnavailable) as exc:
        r.problem(f"{path}.schema", exc.message)
        return None
    return [{"name": name, "type": ftype.value} for name, ftype in derived]
