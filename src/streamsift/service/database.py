"""What the service remembers, in SQLite (`<data_dir>/service.db`, WAL).

- `pipelines`: one row per pipeline: its state, the state its user asked for (`desired_state`,
  which a restarted server brings back), its current version, its last error, and the pid of
  its worker process (for a later server to adopt).
- `pipeline_versions`: every create and edit as a new row: the document as JSON, its secrets
  encrypted (service/secret_box.py).
- `status_history`: every change of state, with its time, error and a note.

One connection, shared by the threads of the service under a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from streamsift.errors import ConflictError, NotFoundError
from streamsift.service.lifecycle import DesiredState, State
from streamsift.service.secret_box import SecretBox, mask

DB_FILE = "service.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pipelines (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    desired_state TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    error TEXT,
    error_at TEXT,
    worker_pid INTEGER
);
CREATE TABLE IF NOT EXISTS pipeline_versions (
    pipeline_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    document TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (pipeline_id, version)
);
CREATE TABLE IF NOT EXISTS status_history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    pipeline_id TEXT NOT NULL,
    at TEXT NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    error TEXT,
    note TEXT
);
CREATE INDEX IF NOT EXISTS status_history_by_pipeline ON status_history (pipeline_id, seq);
"""


@dataclass(frozen=True)
class PipelineRecord:
    id: str
    name: str
    state: State
    desired_state: DesiredState
    version: int
    created_at: datetime
    updated_at: datetime
    error: str | None
    error_at: datetime | None


@dataclass(frozen=True)
class StatusChange:
    at: datetime
    from_state: State | None
    to_state: State
    error: str | None
    note: str | None


def now() -> datetime:
    return datetime.now(timezone.utc)


class ServiceDatabase:
    """The service's SQLite database; documents go in sealed and come out masked or open."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.box = SecretBox(self.data_dir)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            self.data_dir / DB_FILE, check_same_thread=False, isolation_level=None, timeout=30
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # ------------------------------------------------------------------ pipelines

    def add(self, pipeline_id: str, doc: dict[str, Any], model: BaseModel) -> PipelineRecord:
        """A new pipeline in state Created (desired: running), its document as version 1."""
        at = now().isoformat()
        sealed = json.dumps(self.box.seal(doc, model), default=str)
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM pipelines WHERE id = ?", (pipeline_id,)).fetchone():
                raise ConflictError(
                    f"pipeline {pipeline_id} exists already",
                    "give the document another name, or edit the existing pipeline",
                    details={"id": pipeline_id},
                )
            db.execute(
                "INSERT INTO pipelines (id, name, state, desired_state, version, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, 1, ?, ?)",
                (pipeline_id, pipeline_id, State.CREATED.value, DesiredState.RUNNING.value, at, at),
            )
            db.execute(
                "INSERT INTO pipeline_versions VALUES (?, 1, ?, ?)", (pipeline_id, sealed, at)
            )
            self._record_change(db, pipeline_id, at, None, State.CREATED, None, None)
        return self.get(pipeline_id)

    def add_version(self, pipeline_id: str, doc: dict[str, Any], model: BaseModel) -> int:
        """Store an edited document as the pipeline's next version; returns its number."""
        at = now().isoformat()
        sealed = json.dumps(self.box.seal(doc, model), default=str)
        with self._transaction() as db:
            version = self._row(db, pipeline_id)["version"] + 1
            db.execute(
                "INSERT INTO pipeline_versions VALUES (?, ?, ?, ?)",
                (pipeline_id, version, sealed, at),
            )
            db.execute(
                "UPDATE pipelines SET version = ?, updated_at = ? WHERE id = ?",
                (version, at, pipeline_id),
            )
        return version

    def get(self, pipeline_id: str) -> PipelineRecord:
        with self._lock:
            return _record(self._row(self._db, pipeline_id))

    def list(self) -> list[PipelineRecord]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM pipelines ORDER BY created_at, id").fetchall()
        return [_record(r) for r in rows]

    def document(
        self, pipeline_id: str, reveal_secrets: bool = False, version: int | None = None
    ) -> dict[str, Any]:
        """A version of the document (the current one by default): secrets as "***", or in
        clear with `reveal_secrets` (for the worker, through its stdin only)."""
        with self._lock:
            if version is None:
                version = self._row(self._db, pipeline_id)["version"]
            row = self._db.execute(
                "SELECT document FROM pipeline_versions WHERE pipeline_id = ? AND version = ?",
                (pipeline_id, version),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"pipeline {pipeline_id} has no version {version}")
        sealed = json.loads(row["document"])
        return self.box.open(sealed) if reveal_secrets else mask(sealed)

    def set_state(
        self,
        pipeline_id: str,
        state: State,
        *,
        error: str | None = None,
        note: str | None = None,
        desired: DesiredState | None = None,
    ) -> PipelineRecord:
        """Record a change of state (and its error, kept until it runs again)."""
        at = now().isoformat()
        with self._transaction() as db:
            before = State(self._row(db, pipeline_id)["state"])
            db.execute(
                "UPDATE pipelines SET state = ?, updated_at = ? WHERE id = ?",
                (state.value, at, pipeline_id),
            )
            if error is not None:
                db.execute(
                    "UPDATE pipelines SET error = ?, error_at = ? WHERE id = ?",
                    (error, at, pipeline_id),
                )
            elif state is State.RUNNING:  # it runs again: an old error no longer applies
                db.execute(
                    "UPDATE pipelines SET error = NULL, error_at = NULL WHERE id = ?",
                    (pipeline_id,),
                )
            if desired is not None:
                db.execute(
                    "UPDATE pipelines SET desired_state = ? WHERE id = ?",
                    (desired.value, pipeline_id),
                )
            self._record_change(db, pipeline_id, at, before, state, error, note)
        return self.get(pipeline_id)

    def set_error(self, pipeline_id: str, error: str) -> None:
        """The latest error of a pipeline whose state stays (a retry after a retry)."""
        with self._transaction() as db:
            self._row(db, pipeline_id)
            db.execute(
                "UPDATE pipelines SET error = ?, error_at = ? WHERE id = ?",
                (error, now().isoformat(), pipeline_id),
            )

    def worker_pid(self, pipeline_id: str) -> int | None:
        with self._lock:
            return self._row(self._db, pipeline_id)["worker_pid"]

    def set_worker_pid(self, pipeline_id: str, pid: int | None) -> None:
        with self._transaction() as db:
            db.execute("UPDATE pipelines SET worker_pid = ? WHERE id = ?", (pid, pipeline_id))

    def history(self, pipeline_id: str) -> list[StatusChange]:
        with self._lock:
            self._row(self._db, pipeline_id)
            rows = self._db.execute(
                "SELECT * FROM status_history WHERE pipeline_id = ? ORDER BY seq",
                (pipeline_id,),
            ).fetchall()
        return [
            StatusChange(
                at=datetime.fromisoformat(r["at"]),
                from_state=State(r["from_state"]) if r["from_state"] else None,
                to_state=State(r["to_state"]),
                error=r["error"],
                note=r["note"],
            )
            for r in rows
        ]

    def delete(self, pipeline_id: str) -> None:
        with self._transaction() as db:
            self._row(db, pipeline_id)
            for table, column in (
                ("pipelines", "id"),
                ("pipeline_versions", "pipeline_id"),
                ("status_history", "pipeline_id"),
            ):
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (pipeline_id,))

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _row(db: sqlite3.Connection, pipeline_id: str) -> sqlite3.Row:
        row = db.execute("SELECT * FROM pipelines WHERE id = ?", (pipeline_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no pipeline {pipeline_id}", "list the pipelines to see their ids")
        return row

    @staticmethod
    def _record_change(
        db: sqlite3.Connection,
        pipeline_id: str,
        at: str,
        before: State | None,
        after: State,
        error: str | None,
        note: str | None,
    ) -> None:
        db.execute(
            "INSERT INTO status_history (pipeline_id, at, from_state, to_state, error, note) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (pipeline_id, at, before.value if before else None, after.value, error, note),
        )


def _record(row: sqlite3.Row) -> PipelineRecord:
    return PipelineRecord(
        id=row["id"],
        name=row["name"],
        state=State(row["state"]),
        desired_state=DesiredState(row["desired_state"]),
        version=row["version"],
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        error=row["error"],
        error_at=datetime.fromisoformat(row["error_at"]) if row["error_at"] else None,
    )
