"""The pipeline's lifetime counts (engine/ledger.py): per micro-batch, in two parts, replaced
when a batch is redone, folded when committed, read back after a crash at any point."""

from __future__ import annotations

import json
from pathlib import Path

from streamsift.engine.ledger import LEDGER_FILE, Ledger
from streamsift.engine.progress import SinkCounts


def report(batch: int, rows_in: int, start: int, end: int, dropped: int = 0) -> dict:
    return {
        "batchId": batch,
        "numInputRows": rows_in,
        "sources": [{"startOffset": {"t/0": start}, "endOffset": {"t/0": end}}],
        "stateOperators": [{"numRowsDroppedByWatermark": dropped}],
    }


def sink(written: int, dlq: int = 0, rows: int | None = None) -> SinkCounts:
    by_class = {("parse", "malformed_json"): dlq} if dlq else {}
    return SinkCounts(written, dlq, 0, by_class, rows=written + dlq if rows is None else rows)


def run_batches(ledger: Ledger, batches: list[tuple[int, int, int, int]]) -> None:
    """(batch, read, written, dlq): each batch's sink, then its report (10 duplicates each)."""
    for batch, read, written, dlq in batches:
        ledger.record_sink(batch, read, sink(written, dlq))
        ledger.record_report(report(batch, written + dlq, 100 * batch, 100 * batch + read))


def test_counts_add_up_over_runs_and_the_file_folds_to_one_line(tmp_path: Path) -> None:
    first = Ledger(tmp_path, single_source=True, counts_filtered=False).open(None)
    run_batches(first, [(0, 100, 85, 5), (1, 100, 88, 2)])
    totals = first.totals()
    assert (totals["read"], totals["written"], totals["dlq"], totals["duplicates"]) == (
        200,
        173,
        7,
        20,
    )
    assert totals["dlq_by_class"] == [
        {"stage": "parse", "error_class": "malformed_json", "count": 7}
    ]
    assert totals["since"] is not None

    again = Ledger(tmp_path, single_source=True, counts_filtered=False).open(committed=1)
    assert again.totals() == totals  # a resume starts from the totals, not from zero
    assert len((tmp_path / LEDGER_FILE).read_text().splitlines()) == 1
    run_batches(again, [(2, 50, 50, 0)])
    assert again.totals()["written"] == 223 and again.totals()["read"] == 250


def test_a_batch_redone_after_a_crash_counts_once(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=False).open(None)
    run_batches(ledger, [(0, 100, 90, 0)])
    ledger.record_sink(1, 40, sink(40))  # written to ClickHouse, then killed before the commit
    assert ledger.totals()["written"] == 130  # the table holds them already

    redo = Ledger(tmp_path, single_source=True, counts_filtered=False).open(committed=0)
    assert redo.totals()["written"] == 130
    redo.record_sink(1, 40, sink(40))  # Spark redoes batch 1: same rows, same counts
    redo.record_report(report(1, 40, 100, 140))
    assert (redo.totals()["written"], redo.totals()["read"]) == (130, 140)


def test_a_run_killed_between_commit_and_report_keeps_the_batch(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=False).open(None)
    ledger.record_sink(0, 100, sink(95))  # committed by Spark, then killed before its report
    later = Ledger(tmp_path, single_source=True, counts_filtered=False).open(committed=0)
    totals = later.totals()
    assert (totals["read"], totals["written"], totals["duplicates"], totals["batches"]) == (
        100,
        95,
        5,  # its sources' rows taken as the rows the sink got
        1,
    )


def test_filtered_rows_are_the_sources_rows_less_the_sinks(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=True).open(None)
    ledger.record_sink(0, 100, sink(60, 5))
    ledger.record_report(report(0, 90, 0, 100))  # 10 duplicates, then the filter dropped 25
    totals = ledger.totals()
    assert (totals["filtered"], totals["duplicates"], totals["written"], totals["dlq"]) == (
        25,
        10,
        60,
        5,
    )
    assert totals["read"] == totals["written"] + totals["dlq"] + 25 + 10


def test_a_joins_duplicates_and_watermark_drops_come_from_its_reports(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=False, counts_filtered=False).open(None)
    ledger.record_sink(0, 200, sink(70))  # 70 joined rows out of two sources' 200 messages
    ledger.record_report(report(0, 180, 0, 200, dropped=4))
    totals = ledger.totals()
    assert (totals["duplicates"], totals["late_dropped"], totals["filtered"]) == (20, 4, 0)


def test_a_redone_batch_zero_keeps_the_read_it_had(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=False).open(None)
    ledger.record_sink(0, 100, sink(100))
    redo = Ledger(tmp_path, single_source=True, counts_filtered=False).open(committed=None)
    redo.record_sink(0, None, sink(100))  # the new run cannot tell where batch 0 began
    assert redo.totals()["read"] == 100


def test_empty_batches_leave_no_trace_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=False).open(None)
    before = (tmp_path / LEDGER_FILE).read_text()
    ledger.record_sink(0, 0, SinkCounts())
    ledger.record_report(report(0, 0, 0, 0))
    assert (tmp_path / LEDGER_FILE).read_text() == before
    run_batches(ledger, [(1, 10, 10, 0)])
    with (tmp_path / LEDGER_FILE).open("a") as out:
        out.write(json.dumps({"batch": 2, "part": "sink"})[:20])  # a kill -9 mid-write
    assert Ledger(tmp_path, True, False).open(committed=1).totals()["written"] == 10


def test_on_the_pass_through_the_sources_rows_are_the_sinks(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=False, rows_from_sink=True)
    ledger.open(None)
    ledger.record_sink(0, 40, sink(30))
    ledger.record_report(report(0, 1, 0, 40))  # Spark counts one row: one Arrow chunk
    assert (ledger.totals()["duplicates"], ledger.totals()["written"]) == (10, 30)


def test_reports_told_again_count_once(tmp_path: Path) -> None:
    """A run that reads its query's recent reports itself (the listener bus was late to tell
    its end) gets every batch's report again; the next run's first report may restate the
    last batch of the one before."""
    ledger = Ledger(tmp_path, single_source=True, counts_filtered=True).open(None)
    ledger.record_sink(0, 100, sink(60, 5))
    ledger.record_report(report(0, 90, 0, 100))  # 10 duplicates, 25 filtered
    ledger.record_sink(1, 50, sink(30))
    ledger.record_report(report(1, 45, 100, 150))  # 5 duplicates, 15 filtered
    once = ledger.totals()
    for batch in (0, 1):  # query.recentProgress, read after the run ended
        ledger.record_report(report(batch, 90 if batch == 0 else 45, 100 * batch, 100 + 50 * batch))
    assert ledger.totals() == once
    assert (once["filtered"], once["duplicates"], once["read"], once["batches"]) == (40, 15, 150, 2)

    resumed = Ledger(tmp_path, single_source=True, counts_filtered=True).open(committed=1)
    resumed.record_report(report(1, 45, 100, 150))
    resumed.record_sink(2, 20, sink(20))
    resumed.record_report(report(2, 20, 150, 170))
    totals = resumed.totals()
    assert (totals["filtered"], totals["read"], totals["written"]) == (40, 170, 110)
