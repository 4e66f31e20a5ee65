"""`schema.from_registry`: a source's fields filled in from its registry subject at load time.

The document keeps `from_registry` (what a user wrote, and what the service stores); the
loader adds the derived `fields` to the copy it validates, so every later check (dedup keys,
event time, the sink mapping's types) sees them as if they had been listed by hand.
"""

from __future__ import annotations

import copy
from typing import Any

from streamsift.config.errors import ConfigError
from streamsift.config.registry_client import RegistryClient, RegistryError, RegistryUnavailable
from streamsift.config.registry_schemas import registry_fields


def resolve_registry_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with the fields of each `from_registry` source filled in (a copy if any)."""
    places = []
    if isinstance(doc.get("source"), dict):
        places.append(("source", doc["source"]))
    for i, src in enumerate(
        doc.get("sources") or [] if isinstance(doc.get("sources"), list) else []
    ):
        if isinstance(src, dict):
            places.append((f"sources[{i}]", src))
    wanted = [(p, s) for p, s in places if _wants_registry(s)]
    if not wanted:
        return doc
    doc = copy.deepcopy(doc)
    for path, _ in wanted:
        src = doc["source"] if path == "source" else doc["sources"][int(path[8:-1])]
        src["schema"]["fields"] = _fields_of(src, path)
    return doc


def _wants_registry(src: dict[str, Any]) -> bool:
    schema = src.get("schema")
    return isinstance(schema, dict) and schema.get("from_registry") is not None


def _fields_of(src: dict[str, Any], path: str) -> list[dict[str, str]]:
    schema = src["schema"]
    sub = schema["from_registry"]
    if sub is True:
        sub = {}
    if not isinstance(sub, dict):
        raise ConfigError(
            f"{path}.schema.from_registry: write a mapping ({{subject, version, message}}, "
            "each optional), or true"
        )
    if schema.get("fields"):
        raise ConfigError(f"{path}.schema: list the fields or take them from_registry, not both")
    fmt = str(src.get("format") or "json").strip().lower()
    registry = src.get("schema_registry")
    if fmt not in ("avro", "protobuf") or not isinstance(registry, dict) or not registry.get("url"):
        raise ConfigError(
            f"{path}.schema.from_registry: needs format avro or protobuf and a "
            "schema_registry with a url"
        )
    password = registry.get("password")
    client = RegistryClient(
        url=str(registry["url"]).strip().rstrip("/"),
        username=registry.get("username"),
        password=None if password is None else str(password),
    )
    subject = sub.get("subject") or f"{src.get('topic')}-value"
    version = sub.get("version", "latest")
    key = (client.url, client.username, fmt, str(subject), str(version), sub.get("message"))
    try:
        _, fields = registry_fields(client, fmt, str(subject), version, sub.get("message"))
    except (RegistryError, RegistryUnavailable) as exc:
        if password == MASKED and key in _RESOLVED:
            return _RESOLVED[key]  # a document shown with its secrets masked (the service)
        raise ConfigError(f"{path}.schema.from_registry: {exc.message}") from None
    resolved = [{"name": name, "type": ftype.value} for name, ftype in fields]
    if password != MASKED:
        _RESOLVED[key] = resolved
    return resolved


# The service shows stored documents with each secret as "***" (runtime/secret_box.py); such a
# document cannot log in to the registry, so it gets the fields this process last derived
# with the real password for the same registry, user and subject.
MASKED = "***"
_RESOLVED: dict[tuple[object, ...], list[dict[str, str]]] = {}
