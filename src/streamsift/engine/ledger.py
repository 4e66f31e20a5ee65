"""A pipeline's counts over its whole life, kept beside its checkpoint.

`RunStats` counts one run. A pipeline's figures (read, written, duplicates, filtered, late,
dead letters) must survive a stop and resume, a retry, a worker or server restart and kill -9,
and equal what its tables hold. So each micro-batch's counts are recorded by batch id in
`<checkpoint>/counts.jsonl`, in two parts:

- `sink`, written inside foreachBatch once the sink has written the batch and before Spark
  commits it: the messages the batch read (from Spark's offset log), rows written, dead
  letters (by stage and class), late rows, and the rows the sink was given;
- `report`, once Spark reports the batch (after its commit): the rows its sources emitted
  after dedup, the rows its join's watermark dropped, and the messages read as Spark counts
  them (used only when the offset log could not tell).

A batch redone after a crash has the same id and the same rows, so its new entries replace the
old ones: nothing counts twice, and a batch whose rows reached ClickHouse has its sink part
recorded before Spark can forget it. A report of a batch already folded (a run that read its
query's recent reports itself, when the listener bus was late to tell its end, gets every
batch's report again) is left out. Opening folds the entries of committed batches into one
`total` line, so the file stays small. When a run ends between a batch's commit and its
report, the rows its sources emitted are taken to be the rows the sink was given (exact
unless a filter or a join dropped rows in that batch).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from streamsift.engine.progress import SinkCounts, offsets

LEDGER_FILE = "counts.jsonl"
SINK_KEYS = ("read", "written", "dlq", "late", "rows", "late_dropped")
REPORT_KEYS = ("rows_in", "late_dropped", "read_reported")
TOTAL_KEYS = ("read", "written", "dlq", "late", "rows_in", "filtered", "late_dropped", "batches")
COMPACT_EVERY = 2_000  # entries appended before the file is rewritten as one total line


class Ledger:
    """The counts of every micro-batch of one checkpoint (see the module docstring)."""

    def __init__(
        self,
        checkpoint: Path,
        single_source: bool,
        counts_filtered: bool,
        rows_from_sink: bool = False,
    ) -> None:
        self.path = Path(checkpoint) / LEDGER_FILE
        self.single_source = single_source
        self.counts_filtered = counts_filtered
        # the Arrow pass-through: Spark's rows are chunks, so its sources' rows are the rows
        # the sink was given (engine/arrow_passthrough.py)
        self.rows_from_sink = rows_from_sink
        self.total: dict[str, int] = dict.fromkeys(TOTAL_KEYS, 0)
        self.dlq_by_class: dict[str, int] = {}
        self.first_at: str | None = None  # when the pipeline first counted anything
        self._open: dict[int, dict[str, Any]] = {}  # batch id -> {"sink":..., "report":...}
        self._final_through: int | None = None  # the last batch folded: final, not counted again
        self._appended = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ opening

    def open(self, committed: int | None) -> Ledger:
        """Read the file: batches up to `committed` (Spark's last committed batch id) fold
        into the total; later ones stay open, to be replaced when Spark redoes them."""
        with self._lock:
            for entry in _entries(self.path):
                if "total" in entry:
                    self.total.update({k: int(v) for k, v in entry["total"].items()})
                    self.dlq_by_class = dict(entry.get("dlq_by_class") or {})
                    self.first_at = entry.get("first_at") or self.first_at
                    continue
                self.first_at = self.first_at or entry.get("at")
                slot = self._open.setdefault(int(entry["batch"]), {})
                slot[entry["part"]] = entry["counts"]
            done = [b for b in self._open if committed is not None and b <= committed]
            for batch in sorted(done):
                self._fold(self._open.pop(batch))
            self._final_through = committed
            self._rewrite()
        return self

    # ------------------------------------------------------------------ recording

    def record_sink(self, batch: int, read: int | None, counts: SinkCounts) -> None:
        """The batch's sink has written it (before Spark commits it)."""
        part = {
            "read": read,
            "written": counts.written,
            "dlq": counts.dlq,
            "late": counts.late,
            "rows": counts.rows,
            "late_dropped": counts.late_dropped,
            "dlq_by_class": {f"{s}/{c}": n for (s, c), n in counts.dlq_by_class.items()},
        }
        self._record(batch, "sink", part)

    def record_report(self, progress: Mapping[str, Any]) -> None:
        """Spark reported a batch (after its commit): what only its report tells."""
        batch = progress.get("batchId")
        if batch is None:
            return
        read = 0
        for src in progress.get("sources") or []:
            start, end = offsets(src.get("startOffset")), offsets(src.get("endOffset"))
            read += sum(max(0, v - start.get(k, v)) for k, v in end.items())
        part = {
            "rows_in": int(progress.get("numInputRows") or 0),
            "late_dropped": sum(
                int(op.get("numRowsDroppedByWatermark") or 0)
                for op in progress.get("stateOperators") or []
            ),
            "read_reported": read,
        }
        self._record(int(batch), "report", part)

    def _record(self, batch: int, part: str, counts: dict[str, Any]) -> None:
        if part == "report" and self._is_final(batch):
            return  # a batch's report told again: it counted when it was folded
        if not any(v for k, v in counts.items() if k != "dlq_by_class") and not self._has(batch):
            return  # an empty micro-batch (no data, or a no-data batch): nothing to keep
        at = datetime.now(timezone.utc).isoformat()
        with self._lock:
            previous = self._open.get(batch, {}).get(part) or {}
            if part == "sink" and counts["read"] is None:  # a redone batch 0: keep what it was
                counts["read"] = previous.get("read")
            self._open.setdefault(batch, {})[part] = counts
            self.first_at = self.first_at or at
            if part == "report":  # committed: this batch, and those before, are final
                for done in sorted(b for b in self._open if b <= batch):
                    self._fold(self._open.pop(done))
                final = self._final_through
                self._final_through = batch if final is None else max(final, batch)
            entry = {"batch": batch, "part": part, "counts": counts, "at": at}
            self._append(entry)

    def _has(self, batch: int) -> bool:
        with self._lock:
            return batch in self._open

    def _is_final(self, batch: int) -> bool:
        """Folded already (Spark commits batches in order and never redoes a committed one)."""
        with self._lock:
            final = self._final_through
            return final is not None and batch <= final and batch not in self._open

    # ------------------------------------------------------------------ totals

    def totals(self) -> dict[str, Any]:
        """The pipeline's counts over its life (`duplicates` = read less what its sources
        emitted), with the dead letters by stage and class and when counting began."""
        with self._lock:
            total = dict(self.total)
            by_class = dict(self.dlq_by_class)
            for slot in self._open.values():
                self._add(total, by_class, slot)
        total["duplicates"] = max(0, total["read"] - total["rows_in"])
        total["dlq_by_class"] = [  # as RunStats.as_dict has them
            {"stage": key.partition("/")[0], "error_class": key.partition("/")[2], "count": n}
            for key, n in sorted(by_class.items())
        ]
        total["since"] = self.first_at
        return total

    def _fold(self, slot: dict[str, Any]) -> None:
        self._add(self.total, self.dlq_by_class, slot)

    def _add(self, total: dict[str, int], by_class: dict[str, int], slot: dict[str, Any]) -> None:
        sink, report = slot.get("sink") or {}, slot.get("report") or {}
        read = sink.get("read")
        total["read"] += int(read if read is not None else report.get("read_reported") or 0)
        for key in ("written", "dlq", "late"):
            total[key] += int(sink.get(key) or 0)
        for key, n in (sink.get("dlq_by_class") or {}).items():
            by_class[key] = by_class.get(key, 0) + int(n)
        rows = int(sink.get("rows") or 0)
        total["late_dropped"] += int(report.get("late_dropped") or 0)
        total["late_dropped"] += int(sink.get("late_dropped") or 0)  # a join in foreachBatch
        if report and not self.rows_from_sink:
            rows_in = int(report.get("rows_in") or 0)
            if self.counts_filtered:
                total["filtered"] += max(0, rows_in - rows)
        else:  # the pass-through, or a run that ended before Spark's report: its sources
            rows_in = rows  # emitted what the sink got
        if self.single_source:
            total["rows_in"] += rows_in
        else:  # a join's sources emit both sides' rows: its duplicates are the report's
            total["rows_in"] += rows_in if report else int(read or 0)
        total["batches"] += 1

    # ------------------------------------------------------------------ the file

    def _append(self, entry: dict[str, Any]) -> None:
        self._appended += 1
        if self._appended >= COMPACT_EVERY:
            self._rewrite()
            return
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    def _rewrite(self) -> None:
        """The file as one total line plus the open batches' entries (atomically)."""
        self._appended = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            json.dumps(
                {"total": self.total, "dlq_by_class": self.dlq_by_class, "first_at": self.first_at}
            )
        ]
        for batch, slot in sorted(self._open.items()):
            for part, counts in slot.items():
                lines.append(json.dumps({"batch": batch, "part": part, "counts": counts}))
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)


def _entries(path: Path) -> list[dict[str, Any]]:
    """The file's entries; a last line cut short by a crash is skipped."""
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            entries.append(json.loads(line))
    return entries
