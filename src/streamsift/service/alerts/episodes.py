"""Alert episodes, kept in the table `alert_episodes` of the service's SQLite file
(`<data_dir>/service.db`) through a connection of their own.

An episode is one stay of a condition: opened when it starts to hold (one alert), resolved
when it stops (one resolution). At most one open episode per pipeline and condition (a
unique index says so), so a restarted server finds the open ones and neither alerts again
nor forgets to resolve them.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

DB_FILE = "service.db"  # the service's own file (service/database.py)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alert_episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pipeline_id TEXT NOT NULL,
    condition TEXT NOT NULL,
    since TEXT NOT NULL,
    opened_at TEXT NOT NULL,
    figure TEXT,
    reason TEXT,
    resolved_at TEXT,
    resolved_figure TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS alert_episodes_open
    ON alert_episodes (pipeline_id, condition) WHERE resolved_at IS NULL;
CREATE INDEX IF NOT EXISTS alert_episodes_by_pipeline ON alert_episodes (pipeline_id, id);
"""


@dataclass(frozen=True)
class Episode:
    """One stay of a condition: `since` it held (as judged), `opened_at` when the watch
    saw it, the figure and reason then; `resolved_at` and the figure at the end."""

    id: int
    pipeline_id: str
    condition: str
    since: datetime
    opened_at: datetime
    figure: str | None
    reason: str | None
    resolved_at: datetime | None = None
    resolved_figure: str | None = None

    @property
    def open(self) -> bool:
        return self.resolved_at is None


class Episodes:
    """The episodes table; safe to use from several threads (one lock, one connection)."""

    def __init__(self, data_dir: Path) -> None:
        path = Path(data_dir) / DB_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def open_episodes(self) -> dict[tuple[str, str], Episode]:
        """Every open episode, by (pipeline id, condition)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM alert_episodes WHERE resolved_at IS NULL ORDER BY id"
            ).fetchall()
        return {(r["pipeline_id"], r["condition"]): _episode(r) for r in rows}

    def begin(
        self,
        pipeline_id: str,
        condition: str,
        since: datetime,
        opened_at: datetime,
        figure: str | None,
        reason: str | None,
    ) -> Episode | None:
        """Open an episode; None when one is open already for the pair (nothing to tell)."""
        with self._lock:
            try:
                cursor = self._db.execute(
                    "INSERT INTO alert_episodes (pipeline_id, condition, since, opened_at, "
                    "figure, reason) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        pipeline_id,
                        condition,
                        since.isoformat(),
                        opened_at.isoformat(),
                        figure,
                        reason,
                    ),
                )
            except sqlite3.IntegrityError:
                return None
            row = self._db.execute(
                "SELECT * FROM alert_episodes WHERE id = ?", (cursor.lastrowid,)
            ).fetchone()
        return _episode(row)

    def end(self, episode_id: int, at: datetime, figure: str | None) -> Episode | None:
        """Resolve an open episode; None when it was not open (resolved meanwhile)."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE alert_episodes SET resolved_at = ?, resolved_figure = ? "
                "WHERE id = ? AND resolved_at IS NULL",
                (at.isoformat(), figure, episode_id),
            )
            if cursor.rowcount != 1:
                return None
            row = self._db.execute(
                "SELECT * FROM alert_episodes WHERE id = ?", (episode_id,)
            ).fetchone()
        return _episode(row)

    def of_pipeline(self, pipeline_id: str, limit: int = 100) -> list[Episode]:
        """A pipeline's episodes, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM alert_episodes WHERE pipeline_id = ? ORDER BY id DESC LIMIT ?",
                (pipeline_id, limit),
            ).fetchall()
        return [_episode(r) for r in rows]


def _episode(row: sqlite3.Row) -> Episode:
    return Episode(
        id=row["id"],
        pipeline_id=row["pipeline_id"],
        condition=row["condition"],
        since=datetime.fromisoformat(row["since"]),
        opened_at=datetime.fromisoformat(row["opened_at"]),
        figure=row["figure"],
        reason=row["reason"],
        resolved_at=datetime.fromisoformat(row["resolved_at"]) if row["resolved_at"] else None,
        resolved_figure=row["resolved_figure"],
    )
