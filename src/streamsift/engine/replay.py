"""Replaying dead letters through the pipeline's current schema and mapping, exactly once.

After the user fixed the pipeline file (a field's type, a mapping, a table constraint),
`replay` re-parses the pending dead letters like the source does (`transforms/parse.py`,
same strictness, same required fields), writes those that now pass into the table and marks
them `replayed`; those that fail again stay pending with the new error. No Spark is needed:
dead letters were never deduplicated (they failed before dedup), and replay does not dedup
them either (docs/semantics.md, "Replaying the DLQ").

Exactly-once, chunk by chunk (rows in (topic, partition, offset) order):
  1. claim: mark the chunk's rows `replaying` with the chunk's id;
  2. insert the rows that now parse with the token `<chunk id>:rows` (rows ClickHouse refuses
     for their values are split off as in the pipeline, with tokens derived from it);
  3. mark them `replayed` / `retry_failed`.
The chunk id is derived from the rows' identities and mark versions, so every insert's token
is deterministic. After a crash, a re-run first finishes the claimed chunks with the same ids
and the same rows, so ClickHouse skips what it already holds; only then are new chunks cut.
Claiming first is what makes this safe: rows that failed again stay pending and would
otherwise shift the boundaries (and tokens) of the chunks cut after them.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import pyarrow as pa

from streamsift.config.models import KafkaSource, Pipeline
from streamsift.config.rows import KAFKA_FIELDS
from streamsift.config.secrets import secret_values
from streamsift.config.types import FieldType
from streamsift.engine.batch_writer import error_class
from streamsift.engine.errors import PipelineFailed, ReplayConflict, ReplayUnsupported
from streamsift.engine.registry_fields import require_fields, schema_lookup
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.error_text import row_error
from streamsift.sinks.dlq_queries import (
    REPLAYED,
    REPLAYING,
    RETRY_FAILED,
    DeadLetter,
    DlqQueries,
    digest,
)
from streamsift.transforms.column_values import shape_columns
from streamsift.transforms.parse import (
    FieldSpec,
    require_present,
    required_fields,
)
from streamsift.transforms.registry_decode import make_parser

log = logging.getLogger("streamsift.engine")

Failure = tuple[str, str, str]  # stage, error class, message
# Kafka metadata a mapping may name besides payload fields; a dead letter carries all four.
KAFKA_META: dict[str, FieldType] = {name: ftype for name, (_, ftype) in KAFKA_FIELDS.items()}


@dataclass
class ReplayReport:
    """What a replay did (or, with dry_run, would do)."""

    replayed: int = 0
    still_failing: int = 0
    chunks: int = 0
    resumed_chunks: int = 0
    dry_run: bool = False
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        return {
            "replayed": self.replayed,
            "still_failing": self.still_failing,
            "chunks": self.chunks,
            "resumed_chunks": self.resumed_chunks,
            "dry_run": self.dry_run,
            "still_failing_by_class": [
                {"stage": s, "error_class": c, "count": n}
                for (s, c), n in sorted(self.failures.items())
            ],
        }


@dataclass
class Outcome:
    """A chunk re-processed: mapped rows that now pass, and failures by row index."""

    rows: pa.Table
    row_index: list[int]  # for each row of `rows`, its index in the chunk
    failures: dict[int, Failure]


def _only_source(pipeline: Pipeline) -> KafkaSource:
    """The source of a single-source pipeline: the only kind replay handles."""
    (source,) = pipeline.inputs
    return source


def pipeline_fingerprint(pipeline: Pipeline) -> str:
    """Changes whenever replay would parse or map a record differently."""
    parts = [
        _only_source(pipeline).schema_.model_dump_json(),
        pipeline.dedup.model_dump_json(include={"key"}) if pipeline.dedup else "",
        pipeline.sink.table,
        *(m.model_dump_json() for m in pipeline.sink.mapping),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def check_replayable(pipeline: Pipeline) -> None:
    """Refuse what replay cannot redo outside Spark: joins, computed fields and filters."""
    if pipeline.sources or pipeline.join:
        what = "joins two sources (a dead letter is one side of a join)"
    elif pipeline.transform or pipeline.filter:
        what = "has computed fields or a filter (Spark SQL expressions)"
    else:
        fields = {f.name for f in _only_source(pipeline).schema_.fields} | set(KAFKA_META)
        unknown = [m.field for m in pipeline.sink.mapping if m.field not in fields]
        if not unknown:
            return
        what = f"maps fields that are not payload fields ({', '.join(unknown)})"
    raise ReplayUnsupported(
        f"replay cannot re-process dead letters of {pipeline.name}: the pipeline {what}",
        "replay handles single-source pipelines that map payload fields; inspect these with "
        "`streamsift dlq show`, fix the producer, and re-send the records to the topic",
    )


def kafka_column(name: str, letters: Sequence[DeadLetter]) -> pa.Array:
    """A Kafka metadata field (`_kafka.offset`, ...) for `letters`, typed like the source's."""
    if name == "_kafka.topic":
        return pa.array([x.topic for x in letters], pa.string())
    if name == "_kafka.partition":
        return pa.array([x.partition for x in letters], pa.int64())
    if name == "_kafka.offset":
        return pa.array([x.offset for x in letters], pa.int64())
    stamps = pa.array([x.kafka_timestamp_ms for x in letters], pa.int64())
    return stamps.cast(pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC"))


class Replayer:
    """Replays one pipeline's pending dead letters into its table.

    `fault(point, chunk)`, for tests, is called after a chunk's claim (`claimed`), its insert
    (`rows_inserted`) and its marks (`done`); raising there stands for a crash.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        writer: ClickHouseWriter | None = None,
        chunk_size: int | None = None,
        fault: Callable[[str, int], None] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.writer = writer or ClickHouseWriter(pipeline.sink.clickhouse)
        self.queries = DlqQueries(self.writer, pipeline.dlq_table)
        self.chunk_size = chunk_size or pipeline.sink.max_batch_size
        self.fault = fault
        require_fields(pipeline)
        check_replayable(pipeline)
        self.fingerprint = pipeline_fingerprint(pipeline)
        schema = _only_source(pipeline).schema_
        self._specs = {f.name: FieldSpec(f.name, f.column, f.type) for f in schema.fields}
        source = _only_source(pipeline)
        self._parser = make_parser(
            list(self._specs.values()),
            source.format.value,
            schema_lookup(source),
            schema.literal_dots,
        )
        self._required = required_fields(
            [self._specs[k] for k in pipeline.dedup.key] if pipeline.dedup else [],
            self._specs[schema.event_time] if schema.event_time else None,
        )

    def run(self, limit: int | None = None, dry_run: bool = False) -> ReplayReport:
        """Replay up to `limit` pending rows (all by default); finish interrupted chunks first."""
        report = ReplayReport(dry_run=dry_run)
        self.queries.open()
        if not dry_run:
            self._check_table()
            self._resume(report)
        cursor = None
        remaining = limit
        while remaining is None or remaining > 0:
            size = self.chunk_size if remaining is None else min(self.chunk_size, remaining)
            letters = self.queries.pending(size, after=cursor)
            if not letters:
                break
            cursor = letters[-1].ident
            if remaining is not None:
                remaining -= len(letters)
            if dry_run:
                self._count(self.process(letters), report)
                report.chunks += 1
                continue
            chunk = f"replay:{self.fingerprint}:{digest(letters)}"
            claimed = [x.mark(REPLAYING, x.seq + 1, chunk) for x in letters]
            self.queries.write_marks(claimed, f"{chunk}:claim")
            self._fault("claimed", report.chunks)
            self._apply(claimed, chunk, report)
        log.debug(
            "replay of %s: %d replayed, %d still failing",
            self.queries.table,
            report.replayed,
            report.still_failing,
        )
        return report

    def _check_table(self) -> None:
        """The table must exist (the pipeline creates it) and remember insert tokens."""
        sink = self.pipeline.sink
        if not self.writer.table_exists(sink.table):
            raise PipelineFailed(
                f"table {sink.clickhouse.database}.{sink.table} does not exist",
                "run the pipeline first: it creates the table (sink.create_table)",
            )
        self.writer.prepare_table(
            sink.table,
            [(m.column, m.type) for m in sink.mapping],
            create=False,
            on_missing_window=sink.on_missing_dedup_window,
        )

    def _resume(self, report: ReplayReport) -> None:
        """Finish the chunks an interrupted replay claimed, with their original ids."""
        claimed = self.queries.in_flight()
        chunks = [(c, list(rows)) for c, rows in groupby(claimed, key=lambda x: x.chunk)]
        if not chunks:
            return
        for chunk, _ in chunks:
            fingerprint = chunk.split(":")[1] if chunk.count(":") == 2 else ""
            if fingerprint != self.fingerprint:
                raise ReplayConflict(
                    f"an interrupted replay of {self.queries.table} ({len(claimed)} records) ran "
                    "with another schema, mapping or table than the pipeline file has now",
                    "restore the pipeline file as it was for that replay and run replay again "
                    "to finish it; then change the file and replay the rest",
                )
        log.warning(
            "finishing an interrupted replay: %d chunk(s), %d record(s)", len(chunks), len(claimed)
        )
        for chunk, letters in chunks:
            self._apply(letters, chunk, report)
            report.resumed_chunks += 1

    def _apply(self, letters: Sequence[DeadLetter], chunk: str, report: ReplayReport) -> None:
        """Insert a claimed chunk's rows that now pass, then mark every row of it."""
        index = report.chunks
        outcome = self.process(letters)
        failures = dict(outcome.failures)
        refused = self.writer.insert_isolating(
            self.pipeline.sink.table, outcome.rows, f"{chunk}:rows"
        )
        for r in refused:
            message = row_error(r.code, r.message, secret_values(self.pipeline))
            failures[outcome.row_index[r.index]] = ("sink", f"clickhouse_{r.code}", message)
        self._fault("rows_inserted", index)
        marks = [
            x.mark(RETRY_FAILED, x.seq + 1, chunk, failures[i], x.attempts + 1)
            if i in failures
            else x.mark(REPLAYED, x.seq + 1, chunk, attempts=x.attempts + 1)
            for i, x in enumerate(letters)
        ]
        self.queries.write_marks(marks, f"{chunk}:done")
        self._fault("done", index)
        report.chunks += 1
        report.replayed += len(letters) - len(failures)
        report.still_failing += len(failures)
        report.failures.update((s, c) for s, c, _ in failures.values())

    def _count(self, outcome: Outcome, report: ReplayReport) -> None:
        report.replayed += outcome.rows.num_rows
        report.still_failing += len(outcome.failures)
        report.failures.update((s, c) for s, c, _ in outcome.failures.values())

    def process(self, letters: Sequence[DeadLetter]) -> Outcome:
        """Parse and map a chunk with the current pipeline; nothing is written.

        Every dead letter holds its original message, whatever its stage (one ClickHouse
        refused included), so each is parsed exactly as the source parses messages.
        """
        payloads = [x.payload for x in letters]
        result = self._parser.parse(payloads)
        if self._required:
            require_present(result, payloads, self._required)
        failures: dict[int, Failure] = {}
        good = []
        for i, error in enumerate(result.errors):
            if error is None:
                good.append(i)
            else:
                failures[i] = ("parse", error_class(error), error)
        parsed = result.table.take(pa.array(good, pa.int64()))
        mapping = self.pipeline.sink.mapping
        shaped = shape_columns(
            self._map(parsed, [letters[i] for i in good]),
            [(m.column, m.ch_type) for m in mapping],
        )
        for j, reason in shaped.errors.items():
            failures[good[j]] = ("sink", "type_mismatch", reason)
        kept = [j for j in range(len(good)) if j not in shaped.errors]
        rows = shaped.table.take(pa.array(kept, pa.int64())) if shaped.errors else shaped.table
        return Outcome(rows, [good[j] for j in kept], failures)

    def _map(self, parsed: pa.Table, letters: Sequence[DeadLetter]) -> pa.Table:
        """Parsed fields (and Kafka metadata) to the sink's columns, as the pipeline maps them."""
        arrays = []
        for m in self.pipeline.sink.mapping:
            spec = self._specs.get(m.field)
            arrays.append(parsed.column(spec.column) if spec else kafka_column(m.field, letters))
        return pa.Table.from_arrays(arrays, names=[m.column for m in self.pipeline.sink.mapping])

    def _fault(self, point: str, chunk: int) -> None:
        if self.fault is not None:
            self.fault(point, chunk)
