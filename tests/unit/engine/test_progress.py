"""The run's counters: `written` never runs ahead of `read`, also after a resume."""

from __future__ import annotations

import time

from streamsift.engine.progress import RunStats, SinkCounts


def progress(batch: int, start: dict | None, end: dict, rows: int) -> dict:
    return {
        "batchId": batch,
        "numInputRows": rows,
        "batchDuration": 100,
        "sources": [{"startOffset": start, "endOffset": end, "latestOffset": end}],
    }


def test_sink_counts_wait_for_spark_to_report_their_batch() -> None:
    # a resumed run: its first batch re-runs offsets 100..600 planned before a crash
    stats = RunStats(initial_offsets={"t/0": 100})
    stats.add_written(500, 0, 0, batch=7)  # foreachBatch returns before Spark reports batch 7
    assert (stats.read, stats.written) == (0, 0)
    stats.ingest(progress(7, {"t/0": 100}, {"t/0": 600}, 500))
    assert (stats.read, stats.written) == (500, 500)
    stats.add_written(90, 10, 3, batch=8)
    assert stats.written <= stats.read
    stats.ingest(progress(8, {"t/0": 600}, {"t/0": 700}, 100))
    assert (stats.read, stats.written, stats.dlq, stats.late) == (600, 590, 10, 3)


def test_a_batch_retried_inside_the_run_is_counted_once() -> None:
    stats = RunStats()
    stats.add_written(40, 0, 0, batch=3)  # the first try failed after the insert
    stats.add_written(50, 0, 0, batch=3)  # the retry is what Spark commits
    stats.ingest(progress(3, {"t/0": 0}, {"t/0": 50}, 50))
    stats.ingest(progress(3, {"t/0": 0}, {"t/0": 50}, 50))  # restated by a later report
    assert (stats.read, stats.written) == (50, 50)


def test_counts_without_a_batch_are_counted_at_once() -> None:
    stats = RunStats()
    stats.add_written(5, 1, 0)
    assert (stats.written, stats.dlq) == (5, 1)


def test_the_first_rows_are_stamped_when_the_sink_wrote_them() -> None:
    stats = RunStats()
    stats.add_written(0, 2, 0, batch=0)  # dead letters only: no rows in the table yet
    assert stats.first_rows_at is None
    before = time.time()
    stats.add_written(10, 0, 0, batch=1)  # in the table now, before Spark reports the batch
    stamped = stats.first_rows_at
    assert stamped is not None and before <= stamped <= time.time()
    stats.add_written(10, 0, 0, batch=2)
    assert stats.first_rows_at == stamped == stats.as_dict()["first_rows_at"]


def test_filtered_rows_count_once_when_reports_are_told_again() -> None:
    stats = RunStats(counts_filtered=True)
    for batch, (start, end, rows_in, given) in enumerate([(0, 100, 90, 65), (100, 150, 45, 30)]):
        stats.add_counts(SinkCounts(given, 0, 0, rows=given), batch)
        stats.ingest(progress(batch, {"t/0": start}, {"t/0": end}, rows_in))
    stats.ingest(progress(0, {"t/0": 0}, {"t/0": 100}, 90))  # query.recentProgress, read again
    stats.ingest(progress(1, {"t/0": 100}, {"t/0": 150}, 45))
    assert (stats.filtered, stats.duplicates, stats.read, stats.written) == (40, 15, 150, 95)
