"""`schema.from_registry`: a source's fields filled in from its registry subject, where a
pipeline is validated to be run (the CLI, the service's create/edit and validate routes) and
where it is run (the worker).

A stored document keeps `from_registry` as written (the service shows it with its password
masked); config validates it without its fields (config/models.py: fields pending), so
reading it back never needs the registry. Only a document with its secrets in clear is
resolved here: the fields are fetched with the real login, added to a copy, and the copy is
validated in full, so every check (dedup keys, event time, the sink mapping's types) sees
them as if they had been listed by hand. GlassFlow files with an Avro or Protobuf source
and no `schema_fields` (nor an Avro seed) get theirs the same way before they are converted.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from streamsift.config import ConfigError, parse_pipeline, read_document
from streamsift.config.loader import is_glassflow
from streamsift.config.models import Pipeline
from streamsift.config.registry_schemas import FieldList, RegistryError, schema_fields
from streamsift.config.secrets import MASK
from streamsift.config.source import KafkaSource
from streamsift.sources.schema_registry import RegistryClient, RegistryUnavailable, WriterSchemas

REGISTRY_FORMATS = ("avro", "protobuf")


def load_resolved(path: str | Path) -> Pipeline:
    """A pipeline file validated with its registry fields (what `streamsift run` runs)."""
    return parse_resolved(read_document(path), source=str(path))


def parse_resolved(doc: dict[str, Any], source: str | None = None) -> Pipeline:
    """`doc` (secrets in clear) validated with the fields of each `from_registry` source; a
    registry that does not answer is RegistryUnavailable (transient: ask again later)."""
    try:
        resolved = resolved_document(doc)
    except ConfigError as exc:
        raise ConfigError(exc.problems, source=source) from None
    return parse_pipeline(resolved, source=source)


def resolved_document(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its registry fields filled in (a copy if any; `doc` itself otherwise)."""
    if not isinstance(doc, dict):
        return doc
    if is_glassflow(doc):
        return glassflow_with_registry_fields(doc)
    places = []
    if isinstance(doc.get("source"), dict):
        places.append(("source", doc["source"]))
    if isinstance(doc.get("sources"), list):
        places += [
            (f"sources[{i}]", s) for i, s in enumerate(doc["sources"]) if isinstance(s, dict)
        ]
    wanted = [(path, src) for path, src in places if _wants_registry(src)]
    if not wanted:
        return doc
    doc = copy.deepcopy(doc)
    for path, _ in wanted:
        src = doc["source"] if path == "source" else doc["sources"][int(path[8:-1])]
        src["schema"]["fields"] = _fields_of(src, path)
    return doc


def glassflow_with_registry_fields(doc: dict[str, Any]) -> dict[str, Any]:
    """A GlassFlow v3 document whose Avro/Protobuf sources list no `schema_fields` (and have
    no Avro seed to read them from) with the fields of their topic's value subject, latest
    version (for Protobuf, the seed's message `name`)."""
    sources = doc.get("sources")
    if not isinstance(sources, list):
        return doc
    wanted = [i for i, src in enumerate(sources) if _glassflow_wants_registry(src)]
    if not wanted:
        return doc
    doc = copy.deepcopy(doc)
    for i in wanted:
        src = doc["sources"][i]
        fmt = str(src["format"]).strip().lower()
        seed = src.get("schema")
        message = seed.get("name") if isinstance(seed, dict) else None
        registry = src["schema_registry"]
        client = _client(
            f"sources[{i}].schema_registry.api_secret",
            registry["url"],
            registry.get("api_key") or None,
            registry.get("api_secret") or None,
        )
        subject = f"{src.get('topic')}-value"
        derived = _fetch(f"sources[{i}].schema", client, fmt, subject, "latest", message)
        src["schema_fields"] = [{"name": name, "type": ftype.value} for name, ftype in derived]
    return doc


def require_fields(pipeline: Pipeline) -> None:
    """A pipeline is run only with its registry fields fetched (`parse_resolved`)."""
    if pipeline.fields_pending:
        pending = [s.id for s in pipeline.inputs if s.schema_.fields_pending]
        raise ConfigError(
            f"source {', '.join(pending)}: schema.from_registry fields were not fetched; load "
            "the document with runtime.registry_fields.parse_resolved (secrets in clear)"
        )


def schema_lookup(src: KafkaSource) -> WriterSchemas | None:
    """Where the executors find the writer schemas of `src`'s messages (None for JSON)."""
    if src.schema_registry is None:
        return None
    return WriterSchemas(RegistryClient.of(src.schema_registry), src.format.value == "protobuf")


def _wants_registry(src: dict[str, Any]) -> bool:
    schema = src.get("schema")
    return isinstance(schema, dict) and schema.get("from_registry") not in (None, False)


def _glassflow_wants_registry(src: Any) -> bool:
    if not isinstance(src, dict) or src.get("schema_fields"):
        return False
    fmt = str(src.get("format") or "json").strip().lower()
    registry = src.get("schema_registry")
    seed = src.get("schema")
    avro_seed = fmt == "avro" and isinstance(seed, dict) and seed.get("type") == "record"
    has_url = isinstance(registry, dict) and bool(registry.get("url"))
    return fmt in REGISTRY_FORMATS and has_url and not avro_seed


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
    if fmt not in REGISTRY_FORMATS or not isinstance(registry, dict) or not registry.get("url"):
        raise ConfigError(
            f"{path}.schema.from_registry: needs format avro or protobuf and a "
            "schema_registry with a url"
        )
    client = _client(
        f"{path}.schema_registry.password",
        registry["url"],
        registry.get("username"),
        registry.get("password"),
    )
    subject = str(sub.get("subject") or f"{src.get('topic')}-value")
    version = sub.get("version", "latest")
    derived = _fetch(
        f"{path}.schema.from_registry", client, fmt, subject, version, sub.get("message")
    )
    return [{"name": name, "type": ftype.value} for name, ftype in derived]


def _client(where: str, url: Any, username: Any, password: Any) -> RegistryClient:
    if password == MASK:  # a document read back from the service: never sent to a registry
        raise ConfigError(
            f"{where}: masked ({MASK}); fields are taken from the registry with the stored "
            "password, by the service itself"
        )
    return RegistryClient(
        url=str(url).strip().rstrip("/"),
        username=None if username is None else str(username),
        password=None if password is None else str(password),
    )


def _fetch(
    where: str,
    client: RegistryClient,
    fmt: str,
    subject: str,
    version: int | str,
    message: str | None,
) -> FieldList:
    protobuf = fmt == "protobuf"
    try:
        return schema_fields(
            client.subject_schema(subject, version, protobuf), fmt, subject, message
        )
    except RegistryError as exc:
        raise ConfigError(f"{where}: {exc.message}") from None
    except RegistryUnavailable as exc:  # it may answer later: transient, not the document's fault
        raise RegistryUnavailable(f"{where}: {exc.message}", exc.hint) from None
