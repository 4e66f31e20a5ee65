"""A Confluent-compatible schema registry, read over HTTP with the standard library.

A connector beside the Kafka one: runtime asks it for a subject's schema (fields taken from
the registry, engine/registry_fields.py) and the executors for a schema by the id in each
message (`WriterSchemas`, the lookup transforms/registry_decode.py is given). Schemas are immutable per id, so they are cached for the life
of the process; a subject's `latest` version is cached briefly. Picklable: Spark ships it to
the executors inside the record processor. The password never appears in a repr, a log line
or an error message.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streamsift.config.registry_schemas import RegisteredSchema, RegistryError, SchemaBundle
from streamsift.sources.errors import RegistryUnavailable

if TYPE_CHECKING:  # executors unpickle this module: keep pydantic out of them
    from streamsift.config.source import SchemaRegistry

__all__ = [
    "RegisteredSchema",
    "RegistryClient",
    "RegistryError",
    "RegistryUnavailable",
    "SchemaBundle",
    "WriterSchemas",
    "clear_cache",
]

# Answers that say "no such thing": the registry will not change its mind on a retry.
SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
LATEST_TTL_S = 30.0
TIMEOUT_S = 10.0
ATTEMPTS = 4


@dataclass(frozen=True)
class RegistryClient:
    """Where the registry is and how to log in; `password` is held in clear: never log it."""

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"RegistryClient(url={self.url!r})"

    @classmethod
    def of(cls, settings: SchemaRegistry) -> RegistryClient:
        """The client of a source's `schema_registry` (holds the password: never log it)."""
        password = settings.password
        return cls(
            settings.url,
            settings.username,
            None if password is None else password.get_secret_value(),
        )

    @functools.cached_property
    def identity(self) -> str:
        """Tells registries and logins apart (cache keys) without holding the password."""
        text = json.dumps([self.url, self.username, self.password])
        return hashlib.sha256(text.encode()).hexdigest()

    def schema_by_id(self, schema_id: int, protobuf: bool = False) -> RegisteredSchema:
        """The schema with this id (cached for the process: ids never change meaning)."""
        key = (self.identity, schema_id, protobuf)
        with _LOCK:
            hit = _BY_ID.get(key)
        if hit is not None:
            return hit
        query = "?format=serialized" if protobuf else ""
        body = self._get(f"/schemas/ids/{schema_id}{query}")
        found = _registered(body, schema_id)
        with _LOCK:
            _BY_ID[key] = found
        return found

    def subject_version(
        self, subject: str, version: int | str = "latest", protobuf: bool = False
    ) -> RegisteredSchema:
        """A subject's schema at `version` ("latest" is cached for a few seconds only)."""
        key = (self.identity, subject, str(version), protobuf)
        now = time.monotonic()
        with _LOCK:
            hit = _BY_SUBJECT.get(key)
        if hit is not None and (version != "latest" or now - hit[0] < LATEST_TTL_S):
            return hit[1]
        quoted = urllib.parse.quote(subject, safe="")
        query = "?format=serialized" if protobuf else ""
        body = self._get(f"/subjects/{quoted}/versions/{version}{query}")
        found = _registered(body, int(body.get("id", 0)))
        with _LOCK:
            _BY_SUBJECT[key] = (now, found)
        return found

    def writer_schema(self, schema_id: int, protobuf: bool = False) -> SchemaBundle:
        """The schema with this id and the schemas it references (what decoding needs)."""
        return self.bundle(self.schema_by_id(schema_id, protobuf), protobuf)

    def subject_schema(
        self, subject: str, version: int | str = "latest", protobuf: bool = False
    ) -> SchemaBundle:
        """A subject's schema at `version` and the schemas it references."""
        return self.bundle(self.subject_version(subject, version, protobuf), protobuf)

    def bundle(self, registered: RegisteredSchema, protobuf: bool = False) -> SchemaBundle:
        """`registered` with its references fetched, dependencies first, each once."""
        refs: dict[str, RegisteredSchema] = {}

        def add(schema: RegisteredSchema) -> None:
            for name, subject, version in schema.references:
                if name in refs or name.startswith("google/protobuf/"):
                    continue  # well-known types: every decoder has them
                ref = self.subject_version(subject, version, protobuf=protobuf)
                add(ref)
                refs[name] = ref

        add(registered)
        return SchemaBundle(registered, tuple(refs.items()))

    def _get(self, path: str) -> dict[str, Any]:
        request = urllib.request.Request(self.url.rstrip("/") + path)
        request.add_header("Accept", "application/vnd.schemaregistry.v1+json, application/json")
        if self.username is not None:
            token = base64.b64encode(f"{self.username}:{self.password or ''}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        where = f"schema registry {self.url}"
        last = ""
        for attempt in range(ATTEMPTS):
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                    body = json.loads(response.read() or b"{}")
                    if not isinstance(body, dict):
                        raise RegistryError(f"{where} answered {path} with a non-object")
                    return body
            except urllib.error.HTTPError as exc:
                code, message = _error_body(exc)
                if exc.code < 500:
                    raise RegistryError(
                        f"{where} answered {exc.code} to GET {path}: {message}"
                        + (
                            " (check source.schema_registry.username/password)"
                            if exc.code in (401, 403)
                            else ""
                        ),
                        exc.code,
                        code,
                    ) from None
                last = f"{exc.code} {message}"
            except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
                last = str(getattr(exc, "reason", exc))
            if attempt < ATTEMPTS - 1:
                time.sleep(0.25 * 2**attempt)
        raise RegistryUnavailable(f"{where} did not answer GET {path}: {last}")


def _error_body(exc: urllib.error.HTTPError) -> tuple[int, str]:
    try:
        body = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return 0, exc.reason or ""
    if not isinstance(body, dict):
        return 0, str(exc.reason or "")
    return int(body.get("error_code") or 0), str(body.get("message") or exc.reason or "")


def _registered(body: dict[str, Any], schema_id: int) -> RegisteredSchema:
    refs = tuple(
        (str(r.get("name")), str(r.get("subject")), int(r.get("version") or 0))
        for r in body.get("references") or []
    )
    return RegisteredSchema(
        schema_id=schema_id,
        schema=str(body.get("schema") or ""),
        schema_type=str(body.get("schemaType") or "AVRO").upper(),
        references=refs,
        subject=body.get("subject"),
        version=body.get("version"),
    )


@dataclass(frozen=True)
class WriterSchemas:
    """The schema lookup a decoder is given: a writer's schema by the id in a message.
    Picklable (shipped to the executors); the client's caches make it one fetch per id and
    process."""

    client: RegistryClient
    protobuf: bool = False

    def __call__(self, schema_id: int) -> SchemaBundle:
        return self.client.writer_schema(schema_id, self.protobuf)


_LOCK = threading.Lock()
_BY_ID: dict[tuple[Any, ...], RegisteredSchema] = {}
_BY_SUBJECT: dict[tuple[Any, ...], tuple[float, RegisteredSchema]] = {}


def clear_cache() -> None:
    """Forget every cached schema (tests)."""
    with _LOCK:
        _BY_ID.clear()
        _BY_SUBJECT.clear()
