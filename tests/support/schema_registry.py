"""A small Confluent-compatible schema registry for tests (no registry server installs here).

It implements exactly what confluent-kafka's `SchemaRegistryClient`, its Avro and Protobuf
serializers, and streamsift's own decoder call: register a subject version, look a schema
up under a subject, get a schema by id, get a subject's versions (`latest` too), list
subjects (names may hold "/", as Protobuf references' do). Ids are global, as in Confluent's registry: the same schema (text, type and
references) registered under two subjects keeps one id. Compatibility checks are not
implemented. Schemas are kept as registered: confluent-kafka's Protobuf serializer
registers the base64 `FileDescriptorProto`, which is what `?format=serialized` returns.

Optional HTTP basic auth: every request must then carry the given user and password.
"""

from __future__ import annotations

import base64
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass(frozen=True)
class StoredSchema:
    schema: str
    schema_type: str
    references: tuple[tuple[str, str, int], ...]  # (name, subject, version)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.schema}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [
                {"name": n, "subject": s, "version": v} for n, s, v in self.references
            ]
        return out


@dataclass
class RegistryState:
    """Schemas by id, and each subject's versions (a list of ids, version = index + 1)."""

    by_id: dict[int, StoredSchema] = field(default_factory=dict)
    subjects: dict[str, list[int]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)  # "GET /schemas/ids/1", for tests
    lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, subject: str, stored: StoredSchema) -> tuple[int, int]:
        """The schema's id and its version under `subject`, adding either if new."""
        with self.lock:
            schema_id = next((i for i, s in self.by_id.items() if s == stored), None)
            if schema_id is None:
                schema_id = len(self.by_id) + 1
                self.by_id[schema_id] = stored
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id, versions.index(schema_id) + 1


def _error(status: int, code: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"error_code": code, "message": message}, status_code=status, media_type=CONTENT_TYPE
    )


def _ok(body: Any) -> JSONResponse:
    return JSONResponse(body, media_type=CONTENT_TYPE)


def _stored(body: Any) -> StoredSchema | None:
    if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
        return None
    refs = tuple(
        (str(r["name"]), str(r["subject"]), int(r["version"])) for r in body.get("references") or []
    )
    return StoredSchema(body["schema"], str(body.get("schemaType") or "AVRO").upper(), refs)


def build_registry_app(
    state: RegistryState | None = None, username: str | None = None, password: str | None = None
) -> FastAPI:
    """The registry as an ASGI app; serve it with uvicorn on a loopback port."""
    app = FastAPI()
    app.state.registry = reg = state or RegistryState()

    @app.middleware("http")
    async def _auth_and_log(request: Request, call_next: Any) -> Any:
        reg.requests.append(f"{request.method} {request.url.path}")
        if username is not None:
            expected = base64.b64encode(f"{username}:{password or ''}".encode()).decode()
            given = request.headers.get("authorization", "")
            if not secrets.compare_digest(given, f"Basic {expected}"):
                return _error(401, 40101, "Unauthorized")
        return await call_next(request)

    @app.post("/subjects/{subject:path}/versions")
    async def register(subject: str, request: Request) -> JSONResponse:
        stored = _stored(await request.json())
        if stored is None:
            return _error(422, 42201, "Invalid schema: a 'schema' string is required")
        for name, ref_subject, version in stored.references:
            if not 0 < version <= len(reg.subjects.get(ref_subject, [])):
                return _error(422, 42201, f"Invalid schema: reference {name} not found")
        schema_id, version = reg.register(subject, stored)
        return _ok({"id": schema_id, "subject": subject, "version": version, **stored.as_dict()})

    @app.post("/subjects/{subject:path}")
    async def lookup(subject: str, request: Request) -> JSONResponse:
        stored = _stored(await request.json())
        versions = reg.subjects.get(subject)
        if versions is None:
            return _error(404, 40401, f"Subject '{subject}' not found.")
        for i, schema_id in enumerate(versions):
            if reg.by_id[schema_id] == stored:
                body = {"subject": subject, "id": schema_id, "version": i + 1}
                return _ok({**body, **reg.by_id[schema_id].as_dict()})
        return _error(404, 40403, "Schema not found")

    @app.get("/schemas/ids/{schema_id}")
    async def by_id(schema_id: int) -> JSONResponse:
        stored = reg.by_id.get(schema_id)
        if stored is None:
            return _error(404, 40403, "Schema not found")
        return _ok(stored.as_dict())

    @app.get("/subjects")
    async def subjects() -> JSONResponse:
        return _ok(sorted(reg.subjects))

    @app.get("/subjects/{subject:path}/versions/{version}")
    async def version(subject: str, version: str) -> JSONResponse:
        ids = reg.subjects.get(subject)
        if ids is None:
            return _error(404, 40401, f"Subject '{subject}' not found.")
        number = (
            len(ids) if version in ("latest", "-1") else int(version) if version.isdigit() else 0
        )
        if not 0 < number <= len(ids):
            return _error(404, 40402, f"Version {version} not found.")
        schema_id = ids[number - 1]
        body = {"subject": subject, "id": schema_id, "version": number}
        return _ok({**body, **reg.by_id[schema_id].as_dict()})

    @app.get("/subjects/{subject:path}/versions")
    async def versions(subject: str) -> JSONResponse:
        if subject not in reg.subjects:
            return _error(404, 40401, f"Subject '{subject}' not found.")
        return _ok(list(range(1, len(reg.subjects[subject]) + 1)))

    return app
