"""Counting what a run did, from Spark's progress reports and the sink's own counts."""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Histogram bounds (seconds, upper bounds inclusive; +Inf is implied): a micro-batch's duration
# as Spark reports it, and a row's end-to-end latency (Kafka timestamp -> insert acknowledged).
BATCH_SECONDS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
LATENCY_SECONDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)


@dataclass
class Buckets:
    """A histogram's counts: `counts[i]` values <= `bounds[i]` (and above the one before),
    the last one above every bound; plain numbers, so it travels as JSON (status.json, an
    executor's answer) and two of them add up."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0  # the sum of the values observed

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    @property
    def count(self) -> int:
        return sum(self.counts)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def observe_all(self, values: Iterable[float]) -> None:
        for value in values:
            self.observe(value)

    def add(self, other: Buckets) -> None:
        if tuple(other.bounds) != tuple(self.bounds):
            raise ValueError("histograms with different bounds do not add up")
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total

    def as_dict(self) -> dict[str, Any]:
        return {"bounds": list(self.bounds), "counts": list(self.counts), "sum": self.total}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Buckets:
        return cls(tuple(data["bounds"]), list(data["counts"]), float(data["sum"]))


@dataclass
class RunStats:
    """Running totals of one pipeline run (this process only)."""

    read: int = 0  # messages consumed from Kafka (offset ranges of finished batches)
    rows_in: int = 0  # rows the source emitted after dedup (including dead letters)
    written: int = 0  # rows inserted into the table
    dlq: int = 0  # dead letters inserted into the DLQ table
    late: int = 0  # rows older than the dedup window behind the newest event (kept, counted)
    late_dropped: int = 0  # records behind the join's watermark (dropped by Spark's join, counted)
    filtered: int = 0  # rows the pipeline's filter dropped (counted when `counts_filtered`)
    batches: int = 0
    busy_ms: int = 0  # time spent inside micro-batches
    lag: int | None = None  # messages in Kafka not yet read
    first_rows_at: float | None = None  # wall clock (epoch s) when the sink first wrote rows
    status: str | None = None  # e.g. "retrying ClickHouse: connection refused"
    # dead letters by (stage, error class); micro-batch durations; rows' end-to-end latency;
    # ClickHouse retries by operation (insert, command, query, connect)
    dlq_by_class: dict[tuple[str, str], int] = field(default_factory=dict)
    batch_seconds: Buckets = field(default_factory=lambda: Buckets(BATCH_SECONDS))
    latency_seconds: Buckets = field(default_factory=lambda: Buckets(LATENCY_SECONDS))
    retries: dict[str, int] = field(default_factory=dict)
    initial_offsets: dict[str, int] = field(default_factory=dict, repr=False)
    # rows_in from the sink's counts, not Spark's numInputRows (the Arrow pass-through's
    # Spark rows are chunks of rows: engine/arrow_passthrough.py)
    rows_from_sink: bool = field(default=False, repr=False)
    # a single-source pipeline with a filter: the rows it dropped are the source's rows less
    # the rows the sink was given (in a join, unmatched rows drop too: not told apart)
    counts_filtered: bool = field(default=False, repr=False)
    _base: dict[str, int] = field(default_factory=dict, repr=False)
    _ends: dict[str, int] = field(default_factory=dict, repr=False)
    _seen_batches: set[int] = field(default_factory=set, repr=False)
    # a batch's sink counts, held until Spark reports the batch (so `written` never runs
    # ahead of `read`: Spark reports a batch only after the sink returned and it committed)
    _unreported: dict[int, SinkCounts] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def duplicates(self) -> int:
        return max(0, self.read - self.rows_in)

    def add_written(self, rows: int, dlq: int, late: int, batch: int | None = None) -> None:
        """Count what the sink wrote; with `batch`, once Spark has reported that batch."""
        self.add_counts(SinkCounts(rows, dlq, late), batch)

    def add_counts(self, counts: SinkCounts, batch: int | None = None) -> None:
        """`add_written` with everything the sink counted (retries are counted at once: a
        batch's failed try retried as truly as the try Spark commits)."""
        for _ in range(counts.retries):
            self.add_retry("insert")
        with self._lock:
            if counts.written and self.first_rows_at is None:
                self.first_rows_at = time.time()  # the rows are in the table from here on
            if batch is not None and batch not in self._seen_batches:
                self._unreported[batch] = counts  # a re-run batch replaces its try
                return
            self._count(counts)

    def add_retry(self, operation: str) -> None:
        """One ClickHouse action failed transiently and is tried again."""
        with self._lock:
            self.retries[operation] = self.retries.get(operation, 0) + 1

    def _count(self, counts: SinkCounts) -> None:
        self.written += counts.written
        if self.rows_from_sink:
            self.rows_in += counts.rows
        self.dlq += counts.dlq
        self.late += counts.late
        self.late_dropped += counts.late_dropped
        for key, n in counts.dlq_by_class.items():
            self.dlq_by_class[key] = self.dlq_by_class.get(key, 0) + n
        if counts.latency is not None:
            self.latency_seconds.add(counts.latency)

    def ingest(self, progress: Any) -> None:
        """Fold one StreamingQueryProgress (or its dict) into the totals, once per batch."""
        p = progress if isinstance(progress, dict) else json.loads(progress.json)
        batch = p.get("batchId")
        sources = p.get("sources") or []
        with self._lock:
            if sources:
                end = offsets(sources[0].get("endOffset"))
                latest = offsets(sources[0].get("latestOffset")) or end
                if latest and end:
                    self.lag = sum(max(0, latest[k] - end.get(k, 0)) for k in latest)
            if (
                batch is None
                or batch in self._seen_batches
                or not p.get("numInputRows")
                and not sources
            ):
                return
            self._seen_batches.add(batch)
            counts = self._unreported.pop(batch, SinkCounts())
            self._count(counts)
            rows = int(p.get("numInputRows") or 0)
            if self.counts_filtered and not self.rows_from_sink:
                self.filtered += max(0, rows - counts.rows)
            for src in sources:
                # Counted from where this run started to the furthest end seen, so a report
                # that was missed or that restates an earlier batch cannot skew the total.
                start = offsets(src.get("startOffset")) or self.initial_offsets
                for key, value in offsets(src.get("endOffset")).items():
                    self._base.setdefault(key, start.get(key, value))
                    self._ends[key] = max(self._ends.get(key, value), value)
            self.read = sum(self._ends[k] - self._base[k] for k in self._ends)
            if not self.rows_from_sink:
                self.rows_in += rows
            self.late_dropped += sum(
                int(op.get("numRowsDroppedByWatermark") or 0)
                for op in p.get("stateOperators") or []
            )
            self.batches += 1
            self.busy_ms += int(p.get("batchDuration") or 0)
            self.batch_seconds.observe(int(p.get("batchDuration") or 0) / 1000)

    def as_dict(self) -> dict[str, Any]:
        keys = (
            "read",
            "rows_in",
            "written",
            "dlq",
            "late",
            "late_dropped",
            "filtered",
            "batches",
            "busy_ms",
            "lag",
            "first_rows_at",
        )
        with self._lock:
            return {
                **{k: getattr(self, k) for k in keys},
                "duplicates": self.duplicates,
                "dlq_by_class": [
                    {"stage": stage, "error_class": error_class, "count": n}
                    for (stage, error_class), n in sorted(self.dlq_by_class.items())
                ],
                "retries": dict(self.retries),
                "batch_seconds": self.batch_seconds.as_dict(),
                "latency_seconds": self.latency_seconds.as_dict(),
            }

    def line(self) -> str:
        lag = "?" if self.lag is None else f"{self.lag:,}"
        text = (
            f"read {self.read:,} | written {self.written:,} | duplicates dropped {self.duplicates:,}"
            f" | DLQ {self.dlq:,} | late {self.late:,} | lag {lag} | batches {self.batches}"
        )
        if self.late_dropped:
            text += f" | behind the join watermark {self.late_dropped:,}"
        return text + (f" | {self.status}" if self.status else "")


@dataclass
class SinkCounts:
    """What the sink wrote for one batch (or part of one): rows, dead letters (also by stage
    and error class), late rows, the rows' end-to-end latency, and the inserts it retried."""

    written: int = 0
    dlq: int = 0
    late: int = 0
    dlq_by_class: dict[tuple[str, str], int] = field(default_factory=dict)
    latency: Buckets | None = None
    retries: int = 0
    rows: int = 0  # rows the sink was given: the source's rows after dedup, dead letters too
    late_dropped: int = 0  # records a join run in foreachBatch dropped behind its watermark

    def __add__(self, other: SinkCounts) -> SinkCounts:
        by_class = dict(self.dlq_by_class)
        for key, n in other.dlq_by_class.items():
            by_class[key] = by_class.get(key, 0) + n
        latency = None
        for part in (self.latency, other.latency):
            if part is not None:
                latency = latency or Buckets(part.bounds)
                latency.add(part)
        return SinkCounts(
            self.written + other.written,
            self.dlq + other.dlq,
            self.late + other.late,
            by_class,
            latency,
            self.retries + other.retries,
            self.rows + other.rows,
            self.late_dropped + other.late_dropped,
        )

    def as_json(self) -> str:
        """The counts beyond written/dlq/late, as one JSON text (an executor's answer)."""
        return json.dumps(
            {
                "dlq_by_class": [[s, c, n] for (s, c), n in self.dlq_by_class.items()],
                "latency": self.latency.as_dict() if self.latency is not None else None,
                "retries": self.retries,
                "rows": self.rows,
            }
        )

    @classmethod
    def of(cls, written: int, dlq: int, late: int, extra: str) -> SinkCounts:
        data = json.loads(extra)
        latency = data.get("latency")
        return cls(
            written,
            dlq,
            late,
            {(s, c): n for s, c, n in data["dlq_by_class"]},
            Buckets.from_dict(latency) if latency else None,
            int(data.get("retries") or 0),
            int(data.get("rows") or 0),
        )


def lag_by_partition(progress: Mapping[str, Any]) -> dict[str, int]:
    """Messages not yet read, per `topic/partition`, from one progress report."""
    lag: dict[str, int] = {}
    for source in progress.get("sources") or []:
        latest, end = offsets(source.get("latestOffset")), offsets(source.get("endOffset"))
        for key, value in latest.items():
            lag[key] = max(0, value - end.get(key, value))
    return lag


def offsets(value: Any) -> dict[str, int]:
    """A progress report's offsets (`{"topic/partition": n}`, as JSON text or a dict)."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {
        k: int(v)
        for k, v in value.items()
        if isinstance(v, (int, str)) and str(v).lstrip("-").isdigit()
    }
