"""What the GlassFlow-compatible routes (routers/glassflow.py) need besides the service.

- `normalize_v3`: a v3 body as GlassFlow's SDK sends it (`schema: {fields}`) in the shape the
  importer reads (`schema_fields`).
- `Originals`: the GlassFlow document a pipeline was created or edited from, kept beside the
  service's store (`<data_dir>/glassflow/<id>.json`, secrets masked) with its display name, so
  `GET` returns what the user sent rather than a re-export.
- `GlassFlowStatusError` and `glassflow_errors`: the service's refusals in the status codes and
  error codes GlassFlow's SDK maps to its exceptions.
- `transformation_type`, `dlq_state`, `dead_letter_message`: list, DLQ state and DLQ messages
  in GlassFlow's shapes.
- `check_texts`: caps on the free text a GlassFlow body carries and the server keeps (the
  display name, `metadata` and its tags): MAX_NAME characters for a name, MAX_TAGS tags of
  MAX_TAG characters, MAX_METADATA_TEXT for any other text under `metadata`; past a cap is a
  422 naming the field.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from streamsift.config import ConfigError
from streamsift.config.models import Pipeline
from streamsift.engine.dead_letters import DeadLetters
from streamsift.errors import ConflictError
from streamsift.service.database import PipelineRecord
from streamsift.service.lifecycle import State

MASK = "***"
# Keys of a GlassFlow document that hold secrets (masked when the original is kept).
SECRET_KEYS = frozenset(
    {"password", "api_secret", "client_key", "kerberos_keytab", "tls_key", "root_ca_key"}
)
# Caps on free text (check_texts).
MAX_NAME = 256
MAX_TAG = 256
MAX_TAGS = 64
MAX_METADATA_TEXT = 1024
# States a pipeline passes through on its way somewhere (GlassFlow: "in transition").
IN_TRANSITION = frozenset({"Created", "Stopping", "Resuming", "Terminating"})


def glassflow_status(state: State) -> str:
    """A state in GlassFlow's words: it has no `Retrying` (a pipeline retrying a transient
    fault by itself is, to GlassFlow's SDK, still `Running`)."""
    return State.RUNNING.value if state is State.RETRYING else state.value


class GlassFlowStatusError(Exception):
    """An answer in GlassFlow's error shape with a code of its own (e.g. a status error)."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details

    def body(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "details": self.details,
        }


@contextlib.contextmanager
def glassflow_errors(action: str) -> Iterator[None]:
    """Translate the service's refusals of `action` into what GlassFlow's SDK expects.

    Status errors are 400 with GlassFlow's codes (PIPELINE_IN_TRANSITION,
    PIPELINE_ALREADY_IN_STATE, INVALID_STATUS_TRANSITION); a delete that is not allowed says
    "pipeline can only be deleted if it's stopped or terminated"; a document's problems are 422
    with `details.error` (the SDK shows it). Other errors pass to the app's one mapping.
    """
    try:
        yield
    except ConfigError as exc:
        what = "pipeline creation" if action == "create" else f"pipeline {action}"
        raise GlassFlowStatusError(
            422,
            "unprocessable_entity",
            f"{what} failed due to configuration error",
            {"error": "; ".join(exc.problems), "problems": list(exc.problems)},
        ) from None
    except ConflictError as exc:
        current = exc.details.get("current_status")
        if current is None:
            raise  # not about the state (e.g. an edit that needs reset_state): 409
        details = dict(exc.details)
        if exc.hint:
            details["hint"] = exc.hint
        if action == "delete":
            message = (
                f"pipeline can only be deleted if it's stopped or terminated, "
                f"current status: {current}"
            )
            raise GlassFlowStatusError(400, "bad_request", message, details) from None
        if action == "edit":
            message = f"pipeline must be stopped before editing, current status: {current}"
        else:
            message = exc.message
        raise GlassFlowStatusError(400, _status_code(current, action), message, details) from None


def _status_code(current: str, action: str) -> str:
    if (action in ("stop", "terminate") and current == "Stopped") or (
        action == "resume" and current == "Running"
    ):
        return "PIPELINE_ALREADY_IN_STATE"
    if current in IN_TRANSITION:
        return "PIPELINE_IN_TRANSITION"
    return "INVALID_STATUS_TRANSITION"


def check_texts(doc: dict[str, Any]) -> None:
    """422 naming the field when a GlassFlow body's free text is past its cap."""
    name = doc.get("name")
    if isinstance(name, str) and len(name) > MAX_NAME:
        _too_long("name", MAX_NAME, len(name))
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        return
    tags = metadata.get("tags")
    if isinstance(tags, list) and len(tags) > MAX_TAGS:
        raise GlassFlowStatusError(
            422,
            "unprocessable_entity",
            f"metadata.tags: at most {MAX_TAGS} tags (got {len(tags)})",
            {"field": "metadata.tags", "limit": MAX_TAGS},
        )
    stack: list[tuple[str, Any]] = [("metadata", metadata)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, str):
            limit = MAX_TAG if path.startswith("metadata.tags[") else MAX_METADATA_TEXT
            if len(value) > limit:
                _too_long(path, limit, len(value))


def _too_long(field: str, limit: int, length: int) -> None:
    raise GlassFlowStatusError(
        422,
        "unprocessable_entity",
        f"{field}: at most {limit} characters (got {length})",
        {"field": field, "limit": limit},
    )


def normalize_v3(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with each source's `schema: {fields: [...]}` (GlassFlow's SDK 4.x) written as
    `schema_fields` (GlassFlow's API and our importer); other shapes are left as they are."""
    out = copy.deepcopy(doc)
    for source in out.get("sources") or ():
        if not isinstance(source, dict) or "schema_fields" in source:
            continue
        schema = source.get("schema")
        fields = schema.get("fields") if isinstance(schema, dict) else None
        if isinstance(fields, list) and not (schema.get("file") or schema.get("message_type")):
            source["schema_fields"] = fields
            del source["schema"]
    return out


def mask_secrets(value: Any) -> Any:
    """A copy of a GlassFlow document with every non-empty secret shown as "***"."""
    if isinstance(value, dict):
        return {
            k: MASK if k in SECRET_KEYS and isinstance(v, str) and v else mask_secrets(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    return value


def originals_of(data_dir: Path) -> Originals:
    """The GlassFlow documents kept beside a service's store (`<data_dir>/glassflow/`)."""
    return Originals(Path(data_dir) / "glassflow")


class Originals:
    """GlassFlow documents and display names, one JSON file per pipeline in `directory`.

    A kept document is served only while it is the pipeline's current version (same creation
    time, same version): an edit through the native API makes it stale, and the pipeline is
    exported from its streamsift document instead.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _file(self, pipeline_id: str) -> Path:
        return self.directory / f"{pipeline_id}.json"

    def _read(self, pipeline_id: str) -> dict[str, Any]:
        try:
            return json.loads(self._file(pipeline_id).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _write(self, pipeline_id: str, entry: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self._file(pipeline_id).with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        tmp.replace(self._file(pipeline_id))

    def keep(self, record: PipelineRecord, document: dict[str, Any]) -> None:
        """Keep `document` (masked here) as the GlassFlow form of `record`'s version."""
        self._write(
            record.id,
            {
                "created_at": record.created_at.isoformat(),
                "version": record.version,
                "name": document.get("name") or None,
                "document": mask_secrets(document),
            },
        )

    def rename(self, record: PipelineRecord, name: str) -> None:
        entry = self._current(record) or {
            "created_at": record.created_at.isoformat(),
            "version": record.version,
            "document": None,
        }
        entry["name"] = name
        self._write(record.id, entry)

    def name(self, record: PipelineRecord) -> str:
        entry = self._read(record.id)
        if entry.get("created_at") == record.created_at.isoformat() and entry.get("name"):
            return str(entry["name"])
        return record.id

    def document(self, record: PipelineRecord) -> dict[str, Any] | None:
        """The kept GlassFlow document of `record`'s current version (None: none or stale)."""
        entry = self._current(record)
        if not entry or not entry.get("document"):
            return None
        doc = dict(entry["document"])
        doc["version"] = "v3"
        if entry.get("name"):
            doc["name"] = entry["name"]
        return doc

    def _current(self, record: PipelineRecord) -> dict[str, Any] | None:
        entry = self._read(record.id)
        if entry.get("created_at") != record.created_at.isoformat():
            return None
        if entry.get("version") != record.version:
            return {**entry, "document": None}
        return entry

    def forget(self, pipeline_id: str) -> None:
        self._file(pipeline_id).unlink(missing_ok=True)


def transformation_type(pipeline: Pipeline) -> str:
    """GlassFlow's words for what a pipeline does: Ingest Only, Deduplication, Join, or both."""
    joined = pipeline.join is not None
    dedup = pipeline.dedup is not None or any(
        getattr(s, "dedup", None) is not None for s in pipeline.sources or ()
    )
    if joined and dedup:
        return "Join & Deduplication"
    if joined:
        return "Join"
    return "Deduplication" if dedup else "Ingest Only"


def rfc3339(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


# Our DLQ stages in GlassFlow's component names.
_COMPONENTS = {"parse": "ingestor", "sink": "sink"}


def dead_letter_message(letter: Any) -> dict[str, str]:
    """A dead letter as GlassFlow's DLQ message: component, error, original message."""
    return {
        "component": _COMPONENTS.get(letter.origin, letter.origin),
        "error": letter.error,
        "original_message": bytes(letter.payload).decode("utf-8", "replace"),
    }


def dlq_state(letters: DeadLetters) -> dict[str, Any]:
    """GlassFlow's DLQ state: when the last dead letter came and was consumed, and counts."""
    writer = letters.queries.writer
    database = writer.conn.database
    dlq = f"`{database}`.`{letters.queries.table}`"
    marks = f"`{database}`.`{letters.queries.marks_table}`"
    total, last_received = writer.query_rows(f"SELECT count(), max(failed_at) FROM {dlq}")[0]
    consumed, last_consumed = writer.query_rows(
        f"SELECT countIf(state = 'consumed'), maxIf(marked_at, state = 'consumed') "
        f"FROM {marks} FINAL"
    )[0]
    return {
        "last_received_at": rfc3339(last_received) if int(total) else None,
        "last_consumed_at": rfc3339(last_consumed) if int(consumed) else None,
        "total_messages": int(total),
        "unconsumed_messages": letters.pending_count(),
    }


EMPTY_DLQ_STATE: dict[str, Any] = {
    "last_received_at": None,
    "last_consumed_at": None,
    "total_messages": 0,
    "unconsumed_messages": 0,
}
