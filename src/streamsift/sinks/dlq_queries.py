"""Reading and marking a pipeline's dead letters: the queries behind `streamsift dlq`.

The DLQ table stays append-only (the pipeline writes it with exactly-once tokens). What
happened to a dead letter afterwards lives beside it, in `<dlq table>_handled`: one small
*mark* per DLQ row, keyed by the row's (topic, partition, offset, failed_at), versioned by
`seq` in a ReplacingMergeTree. The latest mark says whether the row was consumed, replayed
into the table, is part of a replay in flight, or failed again on replay (with the new
error). Rows without a mark, or whose latest mark is `retry_failed`, are *pending*.

Why marks and not `ALTER TABLE ... UPDATE` on the DLQ: a mutation rewrites the touched parts
in the background, queues behind merges (asynchronous on a server), and would need a new DLQ
column; a mark is one small insert that carries a deterministic deduplication token, so a
retried or re-run mark inserts nothing twice. Reading costs an anti-join (measured in
docs/benchmarks.md, "Dead letters: reading through their marks").
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import pyarrow as pa
from clickhouse_connect.driver.exceptions import ClickHouseError

from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.client import classify, describe
from streamsift.sinks.clickhouse.ddl import create_table_sql, quote
from streamsift.sinks.dlq import (
    UTC_MILLIS,
    TableColumn,
    arrow_schema,
    clickhouse_columns,
    dlq_columns,
)
from streamsift.sinks.errors import DlqMissing

# States of a mark. A DLQ row without a mark is pending too.
CONSUMED = "consumed"
REPLAYED = "replayed"
REPLAYING = "replaying"  # claimed by a replay that has not finished (crash recovery)
RETRY_FAILED = "retry_failed"  # replayed and failed again: pending, with the new error
PENDING_STATES = ("", RETRY_FAILED)
HANDLED_STATES = (CONSUMED, REPLAYED)

# The marks table: a DLQ row's identity (MARK_KEY), the mark's version, state and chunk, and
# the row's latest failure.
MARK_KEY = ("topic", "partition", "offset", "failed_at")
MARK_TABLE: tuple[TableColumn, ...] = (
    *dlq_columns(*MARK_KEY),
    TableColumn("seq", "UInt32", pa.uint32()),
    TableColumn("state", "LowCardinality(String)", pa.string()),
    TableColumn("chunk", "String", pa.string()),
    *dlq_columns("stage", "error_class", "error"),
    TableColumn("attempts", "UInt32", pa.uint32()),
    TableColumn("marked_at", "DateTime64(3, 'UTC')", UTC_MILLIS),
)
MARK_COLUMNS = clickhouse_columns(MARK_TABLE)
MARK_ARROW_SCHEMA = arrow_schema(MARK_TABLE)


@dataclass(frozen=True)
class DeadLetter:
    """One DLQ row with its latest mark: where it came from, and its current failure."""

    topic: str
    partition: int
    offset: int
    failed_at_ms: int  # when the pipeline wrote the row; part of its identity
    kafka_timestamp_ms: int | None
    key: bytes | None
    payload: bytes
    origin: str  # the DLQ row's stage (parse, transform, filter or sink)
    origin_error_class: str
    origin_error: str
    stage: str  # the latest failure: the row's own, or the last replay's
    error_class: str
    error: str
    state: str  # latest mark state ("" when there is none)
    seq: int  # latest mark version (0 when there is none)
    chunk: str
    attempts: int  # replays tried

    @property
    def ident(self) -> tuple[str, int, int, int]:
        return (self.topic, self.partition, self.offset, self.failed_at_ms)

    @property
    def failed_at(self) -> datetime:
        return datetime.fromtimestamp(self.failed_at_ms / 1000, tz=timezone.utc)

    def mark(
        self,
        state: str,
        seq: int,
        chunk: str = "",
        failure: tuple[str, str, str] | None = None,
        attempts: int | None = None,
    ) -> DeadLetter:
        """This row as it will read once the mark is written (the mark's fields)."""
        stage, error_class, error = failure or (self.stage, self.error_class, self.error)
        return replace(
            self,
            state=state,
            seq=seq,
            chunk=chunk,
            stage=stage,
            error_class=error_class,
            error=error,
            attempts=self.attempts if attempts is None else attempts,
        )


@dataclass(frozen=True)
class ClassCount:
    """Dead letters of one (stage, error class), by what happened to them."""

    stage: str
    error_class: str
    pending: int
    consumed: int
    replayed: int
    replaying: int

    @property
    def handled(self) -> int:
        return self.consumed + self.replayed


def digest(letters: Iterable[DeadLetter]) -> str:
    """A stable fingerprint of rows and their mark versions, for insert tokens."""
    h = hashlib.sha256()
    for letter in letters:
        h.update(f"{letter.topic}\0{letter.partition}\0{letter.offset}\0".encode())
        h.update(f"{letter.failed_at_ms}\0{letter.seq}\n".encode())
    return h.hexdigest()[:32]


class DlqQueries:
    """The DLQ table of one pipeline and its marks table, over a ClickHouseWriter."""

    def __init__(self, writer: ClickHouseWriter, table: str) -> None:
        self.writer = writer
        self.table = table
        self.marks_table = f"{table}_handled"
        db = writer.conn.database
        self._dlq = f"{quote(db)}.{quote(table)}"
        self._marks = f"{quote(db)}.{quote(self.marks_table)}"

    def where(self) -> str:
        """Where the DLQ lives, for messages (no secrets)."""
        return f"{self.writer.conn.database}.{self.table} ({describe(self.writer.conn)})"

    # ------------------------------------------------------------------ setup

    def open(self) -> None:
        """Check the DLQ table exists and create the marks table beside it if needed."""
        if not self.writer.table_exists(self.table):
            raise DlqMissing(f"DLQ table {self.where()} does not exist")
        if not self.writer.table_exists(self.marks_table):
            self.writer.command(
                create_table_sql(
                    self.writer.conn.database,
                    self.marks_table,
                    MARK_COLUMNS,
                    MARK_KEY,
                    engine="ReplacingMergeTree(seq)",
                )
            )

    # ------------------------------------------------------------------ reading

    def stats(self) -> list[ClassCount]:
        """Counts by the latest failure's stage and error class."""
        rows = self.writer.query_rows(
            f"""
            SELECT if(m.seq = 0, d.stage, m.stage) AS cur_stage,
                   if(m.seq = 0, d.error_class, m.error_class) AS cur_class,
                   countIf(m.state IN ('', '{RETRY_FAILED}')),
                   countIf(m.state = '{CONSUMED}'),
                   countIf(m.state = '{REPLAYED}'),
                   countIf(m.state = '{REPLAYING}')
            FROM {self._dlq} AS d {self._join()}
            GROUP BY cur_stage, cur_class
            ORDER BY cur_stage, cur_class
            SETTINGS join_use_nulls = 0
            """
        )
        return [ClassCount(s, c, int(p), int(co), int(r), int(ri)) for s, c, p, co, r, ri in rows]

    def pending(
        self, limit: int, after: tuple[str, int, int, int] | None = None, skip: int = 0
    ) -> list[DeadLetter]:
        """Up to `limit` pending rows in (topic, partition, offset) order, after `after`,
        the first `skip` of them left out (a page of a listing)."""
        cond = f"m.state IN ('', '{RETRY_FAILED}')"
        if after is not None:
            topic, partition, offset, failed_ms = after
            cond += (
                f" AND (d.topic, d.partition, d.offset, d.failed_at) > ({_string(topic)}, "
                f"{int(partition)}, {int(offset)}, fromUnixTimestamp64Milli({int(failed_ms)}, 'UTC'))"
            )
        return self._select(cond, f"LIMIT {int(limit)} OFFSET {int(skip)}")

    def in_flight(self) -> list[DeadLetter]:
        """Rows claimed by a replay that did not finish, ordered by chunk."""
        return self._select(f"m.state = '{REPLAYING}'", "", order="m.chunk, ")

    def pending_count(self) -> int:
        rows = self.writer.query_rows(
            f"SELECT count() FROM {self._dlq} AS d {self._join()} "
            f"WHERE m.state IN ('', '{RETRY_FAILED}') SETTINGS join_use_nulls = 0"
        )
        return int(rows[0][0])

    def count(self) -> int:
        return self.writer.count(self.table)

    def _join(self) -> str:
        return (
            f"LEFT JOIN (SELECT * FROM {self._marks} FINAL) AS m "
            "ON d.topic = m.topic AND d.partition = m.partition AND d.offset = m.offset "
            "AND d.failed_at = m.failed_at"
        )

    def _select(self, cond: str, tail: str, order: str = "") -> list[DeadLetter]:
        sql = f"""
            SELECT d.topic, d.partition, d.offset, toUnixTimestamp64Milli(d.failed_at) AS failed_ms,
                   toUnixTimestamp64Milli(d.kafka_timestamp) AS kafka_ms,
                   d.key AS key_raw, d.payload AS payload_raw,
                   d.stage, d.error_class, d.error,
                   m.state AS m_state, m.seq AS m_seq, m.chunk AS m_chunk, m.stage AS m_stage,
                   m.error_class AS m_class, m.error AS m_error, m.attempts AS m_attempts
            FROM {self._dlq} AS d {self._join()}
            WHERE {cond}
            ORDER BY {order}d.topic, d.partition, d.offset, d.failed_at
            {tail}
            SETTINGS join_use_nulls = 0
        """
        rows = self._query(sql, {"key_raw": "bytes", "payload_raw": "bytes"})
        out = []
        for r in rows:
            marked = int(r[11]) > 0
            out.append(
                DeadLetter(
                    topic=r[0],
                    partition=int(r[1]),
                    offset=int(r[2]),
                    failed_at_ms=int(r[3]),
                    kafka_timestamp_ms=None if r[4] is None else int(r[4]),
                    key=r[5],
                    payload=r[6] or b"",
                    origin=r[7],
                    origin_error_class=r[8],
                    origin_error=r[9],
                    stage=r[13] if marked else r[7],
                    error_class=r[14] if marked else r[8],
                    error=r[15] if marked else r[9],
                    state=r[10],
                    seq=int(r[11]),
                    chunk=r[12],
                    attempts=int(r[16]),
                )
            )
        return out

    def _query(self, sql: str, column_formats: dict[str, str]) -> list[tuple]:
        """Like ClickHouseWriter.query_rows, but Strings named in `column_formats` as bytes."""
        writer = self.writer

        def run() -> list[tuple]:
            try:
                return writer.client.query(sql, column_formats=column_formats).result_rows
            except ClickHouseError as exc:
                raise classify(exc, "query") from None

        return writer.retry.run(run, "ClickHouse query", writer.on_status, operation="query")

    # ------------------------------------------------------------------ marking

    def write_marks(self, letters: Sequence[DeadLetter], token: str) -> None:
        """Insert the marks of `letters` (as built by `DeadLetter.mark`) once per token."""
        if not letters:
            return
        now = datetime.now(timezone.utc)
        n = len(letters)
        data = pa.Table.from_arrays(
            [
                pa.array([x.topic for x in letters], pa.string()),
                pa.array([x.partition for x in letters], pa.int32()),
                pa.array([x.offset for x in letters], pa.int64()),
                pa.array([x.failed_at_ms for x in letters], pa.int64()).cast(
                    pa.timestamp("ms", tz="UTC")
                ),
                pa.array([x.seq for x in letters], pa.uint32()),
                pa.array([x.state for x in letters], pa.string()),
                pa.array([x.chunk for x in letters], pa.string()),
                pa.array([x.stage for x in letters], pa.string()),
                pa.array([x.error_class for x in letters], pa.string()),
                pa.array([x.error for x in letters], pa.string()),
                pa.array([x.attempts for x in letters], pa.uint32()),
                pa.array([now] * n, pa.timestamp("ms", tz="UTC")),
            ],
            schema=MARK_ARROW_SCHEMA,
        )
        self.writer.insert(self.marks_table, data, token)

    def mark_consumed(self, letters: Sequence[DeadLetter]) -> None:
        """Mark rows as handled so they are not shown again (re-marking them is a no-op)."""
        self.write_marks(
            [x.mark(CONSUMED, x.seq + 1) for x in letters], f"consume:{digest(letters)}"
        )

    # ------------------------------------------------------------------ purging

    def purge(self) -> int:
        """Delete every dead letter of the pipeline, pending or handled, and their marks."""
        n = self.count()
        self.writer.command(f"TRUNCATE TABLE IF EXISTS {self._dlq}")
        self.writer.command(f"TRUNCATE TABLE IF EXISTS {self._marks}")
        return n


def _string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
