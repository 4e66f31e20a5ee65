"""One benchmark run in its own process: `python -m streamsift_bench.isolated_run SPEC.json`.

A process per run because chdb allows one data directory per process and because the
runner measures a run's memory and CPU as those of its process tree. The spec (written by
the runner) names the kind of run, the topic, the truth and where to write progress and the
result; the result is written as JSON to `spec["result_path"]`.

Kinds: `streamsift` (the real PipelineRunner, `mode` drain = availableNow over a backlog, or
live = running until SIGTERM while the runner produces; with `join` in the spec, the
dedup-join pipeline: both topics deduplicated, then an inner join), `raw` and `ch_final` (see
baselines.py), `raw_vec` (raw_vec.py) and `nospark` (nospark.py). The quixstreams baseline has its own entry point (quix_worker.py).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from streamsift.engine.progress import RunStats
from streamsift_bench.common import (
    INGESTED_AT,
    JOIN_TABLE,
    ProgressLog,
    create_table_sql,
    dir_bytes,
    run_worker,
    verify,
    verify_join,
)
from streamsift_bench.run_setup import TABLE, clickhouse_endpoint, pipeline_doc


class BatchRecorder(RunStats):
    """RunStats that also keeps each micro-batch's rows, duration and phase timings."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_log: dict[int, dict[str, Any]] = {}
        self.end_offsets: dict[str, int] = {}

    @property
    def position(self) -> int:
        """Messages behind the last finished batch's end offsets (from where the query began).

        Computed from end offsets alone: in live runs some batches were seen to report a start
        offset equal to their end although they had rows, which makes RunStats.read (a sum of
        end - start) fall behind.
        """
        begin = self.initial_offsets
        return sum(v - int(begin.get(k, 0)) for k, v in self.end_offsets.items())

    def ingest(self, progress: Any) -> None:
        p = progress if isinstance(progress, dict) else json.loads(progress.json)
        batch = p.get("batchId")
        for src in p.get("sources") or []:
            end = src.get("endOffset")
            end = json.loads(end) if isinstance(end, str) else end
            if isinstance(end, dict):
                for k, v in end.items():
                    self.end_offsets[k] = max(self.end_offsets.get(k, 0), int(v))
        if batch is not None and p.get("numInputRows") and batch not in self.batch_log:
            read_before, rows_before = self.read, self.rows_in
            by_topic_before = self.read_by_topic()
            super().ingest(p)
            sources = p.get("sources") or [{}]
            by_topic = self.read_by_topic()
            self.batch_log[batch] = {
                "read": self.read - read_before,
                "read_by_topic": {t: n - by_topic_before.get(t, 0) for t, n in by_topic.items()},
                "start_offsets": sources[0].get("startOffset"),
                "end_offsets": sources[0].get("endOffset"),
                "rows": self.rows_in - rows_before,  # Spark's rows are chunks on the Arrow path
                "ms": int(p.get("batchDuration") or 0),
                "phases_ms": p.get("durationMs") or {},
                "timestamp": p.get("timestamp"),
            }
            return
        super().ingest(p)

    def read_by_topic(self) -> dict[str, int]:
        """Messages read so far per topic (RunStats.read split by topic)."""
        out: dict[str, int] = {}
        for key, end in self._ends.items():
            topic = key.rpartition("/")[0]
            out[topic] = out.get(topic, 0) + end - self._base[key]
        return out


def batch_summary(log: dict[int, dict[str, Any]], topic: str | None = None) -> dict[str, Any]:
    """Batches with rows: the first (it pays for warming up Python workers) and the rest.

    With `topic`, the steady rate counts only that topic's messages (the join's left side).
    """
    batches = [log[k] for k in sorted(log)]
    out: dict[str, Any] = {"batch_log": batches}
    if batches:
        first = batches[0]
        out["first_batch"] = {"rows": first["rows"], "seconds": first["ms"] / 1000}
        rest = batches[1:]
        ms = sum(b["ms"] for b in rest)
        out["after_first_batch_rate"] = None
        if rest and ms:
            # messages read, not rows kept: offsets of batches 2.. over their durations
            if topic is None:
                read = sum(b["read"] for b in rest)
            else:
                read = sum((b.get("read_by_topic") or {}).get(topic, 0) for b in rest)
            out["after_first_batch_rate"] = round(read / (ms / 1000), 1) if read else None
        phases: dict[str, int] = {}
        for b in batches:
            for k, v in b["phases_ms"].items():
                phases[k] = phases.get(k, 0) + int(v)
        out["phases_seconds"] = {k: round(v / 1000, 3) for k, v in sorted(phases.items())}
    return out


def run_streamsift(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    with clickhouse_endpoint(spec) as port:
        return _run_streamsift(spec, progress, port)


def _run_streamsift(
    spec: dict[str, Any], progress: ProgressLog, server_port: int | None
) -> dict[str, Any]:
    from streamsift.config import parse_pipeline
    from streamsift.engine.runner import PipelineRunner

    pipeline = parse_pipeline(pipeline_doc(spec, server_port))
    work = Path(spec["work_dir"])
    first_batch_at: list[float] = []

    def on_progress(stats: RunStats) -> None:
        if stats.batches and not first_batch_at:
            # the first batch started about busy_ms before it was reported
            first_batch_at.append(time.time() - stats.busy_ms / 1000)
        progress.write(
            position=recorder.position,
            read=stats.read,
            written=stats.written,
            batches=stats.batches,
            busy_ms=stats.busy_ms,
            lag=stats.lag,
        )

    runner = PipelineRunner(pipeline, base_dir=work, on_progress=on_progress)
    runner.stats = recorder = BatchRecorder()  # same totals, plus each batch's own figures
    join = spec.get("join")
    if not join:  # the join's table is created by the sink (no latency column needed)
        runner.writer.command(create_table_sql(TABLE))
    live = spec["mode"] == "live"
    if live:
        signal.signal(signal.SIGTERM, lambda *_: runner.stop())
        signal.signal(signal.SIGINT, lambda *_: runner.stop())
    result = runner.run(until_caught_up=not live)
    done_at = time.time()
    stats = result.stats
    progress.write(
        position=recorder.position,
        **{k: stats[k] for k in ("read", "written", "batches", "busy_ms", "lag")},
    )

    truth = json.loads(Path(spec["truth_path"]).read_text())

    def first_row(sql: str) -> Any:
        return runner.writer.query_rows(sql)[0]

    if join:
        check = verify_join(first_row, JOIN_TABLE, truth["join"], join.get("mode", "interval"))
    else:
        check = verify(first_row, TABLE, truth, dedup=spec["dedup"], rows=runner.writer.query_rows)
    started = spec["process_started"]
    batches = [recorder.batch_log[k] for k in sorted(recorder.batch_log)]
    if batches and batches[0].get("timestamp"):  # Spark's own start time of the first batch
        stamp = batches[0]["timestamp"].replace("Z", "+00:00")
        first_batch_at[:] = [datetime.fromisoformat(stamp).timestamp()]
    out: dict[str, Any] = {
        **batch_summary(recorder.batch_log, topic=spec["topic"] if join else None),
        "read": stats["read"],
        "written": stats["written"],
        "dlq": stats["dlq"],
        "late": stats["late"],
        "batches": stats["batches"],
        "busy_seconds": round(stats["busy_ms"] / 1000, 3),
        "wall_seconds": round(done_at - started, 3),
        "startup_seconds": round(first_batch_at[0] - started, 3) if first_batch_at else None,
        "first_rows_seconds": round(stats["first_rows_at"] - started, 3)
        if stats["first_rows_at"]
        else None,
        "processing_started_at": first_batch_at[0] if first_batch_at else None,
        "done_at": done_at,
        "state_bytes": dir_bytes(work / "checkpoint"),
        "dedup_state_bytes": dir_bytes(work / "checkpoint" / "dedup"),
        "sink_bytes": dir_bytes(work / "clickhouse"),
        **check,
    }
    # Correctness is what ClickHouse holds (and nothing in the DLQ). The run's own message
    # count (RunStats.read, from Spark's progress offsets) is reported beside it: it has been
    # seen to miss batches in live runs while the table was exact.
    out["exact"] = out["exact"] and stats["dlq"] == 0
    out["events"] = truth["produced"]
    out["position"] = recorder.position
    out["stats_read_matches"] = stats["read"] == truth["produced"]
    if join:
        # rates are per left event; the right stream and the join's own figures beside them
        right = truth["join"]["right_messages"]
        out["left_events"] = truth["produced"]
        out["right_events"] = right
        out["messages"] = truth["produced"] + right
        out["read_by_topic"] = recorder.read_by_topic()
        out["late_dropped"] = stats["late_dropped"]
        out["join_mode"] = join.get("mode", "interval")
        out["stats_read_matches"] = stats["read"] == out["messages"]
        # Spark's state stores, and a latest join's own state (transforms/join/latest_arrow.py)
        out["join_state_bytes"] = dir_bytes(work / "checkpoint" / "spark" / "state") + dir_bytes(
            work / "checkpoint" / "latest-join"
        )
    if live:
        latency_path = Path(spec["latency_path"])
        rows = runner.writer.query_rows(
            f"SELECT produced_at_ms, toUnixTimestamp64Milli({INGESTED_AT}) FROM {TABLE}"
        )
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(
            pa.table(
                {
                    "produced_at_ms": pa.array([r[0] for r in rows], pa.int64()),
                    "ingested_ms": pa.array([r[1] for r in rows], pa.int64()),
                }
            ),
            latency_path,
        )
        out["latency_path"] = str(latency_path)
    return out


def run(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """The run kind the spec names: streamsift itself or one of the baselines."""
    if spec["kind"] == "streamsift":
        return run_streamsift(spec, progress)
    if spec["kind"] == "raw" and spec.get("join"):
        from streamsift_bench.baselines import run_raw_join

        return run_raw_join(spec, progress)
    if spec["kind"] in ("raw", "ch_final"):
        from streamsift_bench.baselines import run_raw

        return run_raw(spec, progress)
    if spec["kind"] == "raw_vec":
        from streamsift_bench.raw_vec import run_raw_vec

        return run_raw_vec(spec, progress)
    if spec["kind"] == "nospark":
        from streamsift_bench.nospark import run_nospark

        return run_nospark(spec, progress)
    raise ValueError(f"unknown worker kind {spec['kind']!r}")


def main(argv: list[str] | None = None) -> int:
    return run_worker(argv, run)


if __name__ == "__main__":
    sys.exit(main())
