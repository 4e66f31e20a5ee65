"""Counting what a run did, from Spark's progress reports and the sink's own counts."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunStats:
    """Running totals of one pipeline run (this process only)."""

    read: int = 0  # messages consumed from Kafka (offset ranges of finished batches)
    rows_in: int = 0  # rows the source emitted after dedup (including dead letters)
    written: int = 0  # rows inserted into the table
    dlq: int = 0  # dead letters inserted into the DLQ table
    late: int = 0  # rows older than the dedup window behind the newest event (kept, counted)
    late_dropped: int = 0  # records behind the join's watermark (dropped by Spark's join, counted)
    batches: int = 0
    busy_ms: int = 0  # time spent inside micro-batches
    lag: int | None = None  # messages in Kafka not yet read
    status: str | None = None  # e.g. "retrying ClickHouse: connection refused"
    initial_offsets: dict[str, int] = field(default_factory=dict, repr=False)
    _base: dict[str, int] = field(default_factory=dict, repr=False)
    _ends: dict[str, int] = field(default_factory=dict, repr=False)
    _seen_batches: set[int] = field(default_factory=set, repr=False)
    # a batch's sink counts, held until Spark reports the batch (so `written` never runs
    # ahead of `read`: Spark reports a batch only after the sink returned and it committed)
    _unreported: dict[int, tuple[int, int, int]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def duplicates(self) -> int:
        return max(0, self.read - self.rows_in)

    def add_written(self, rows: int, dlq: int, late: int, batch: int | None = None) -> None:
        """Count what the sink wrote; with `batch`, once Spark has reported that batch."""
        with self._lock:
            if batch is not None and batch not in self._seen_batches:
                self._unreported[batch] = (rows, dlq, late)  # a re-run batch replaces its try
                return
            self._count(rows, dlq, late)

    def _count(self, rows: int, dlq: int, late: int) -> None:
        self.written += rows
        self.dlq += dlq
        self.late += late

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
            self._count(*self._unreported.pop(batch, (0, 0, 0)))
            rows = int(p.get("numInputRows") or 0)
            for src in sources:
                # Counted from where this run started to the furthest end seen, so a report
                # that was missed or that restates an earlier batch cannot skew the total.
                start = offsets(src.get("startOffset")) or self.initial_offsets
                for key, value in offsets(src.get("endOffset")).items():
                    self._base.setdefault(key, start.get(key, value))
                    self._ends[key] = max(self._ends.get(key, value), value)
            self.read = sum(self._ends[k] - self._base[k] for k in self._ends)
            self.rows_in += rows
            self.late_dropped += sum(
                int(op.get("numRowsDroppedByWatermark") or 0)
                for op in p.get("stateOperators") or []
            )
            self.batches += 1
            self.busy_ms += int(p.get("batchDuration") or 0)

    def as_dict(self) -> dict[str, Any]:
        keys = (
            "read",
            "rows_in",
            "written",
            "dlq",
            "late",
            "late_dropped",
            "batches",
            "busy_ms",
            "lag",
        )
        return {**{k: getattr(self, k) for k in keys}, "duplicates": self.duplicates}

    def line(self) -> str:
        lag = "?" if self.lag is None else f"{self.lag:,}"
        text = (
            f"read {self.read:,} | written {self.written:,} | duplicates dropped {self.duplicates:,}"
            f" | DLQ {self.dlq:,} | late {self.late:,} | lag {lag} | batches {self.batches}"
        )
        if self.late_dropped:
            text += f" | behind the join watermark {self.late_dropped:,}"
        return text + (f" | {self.status}" if self.status else "")


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
