"""The dedup-join bench scenario without a broker: its pipeline, its check, its report."""

from __future__ import annotations

from streamsift.config import parse_pipeline
from streamsift.config.models import JoinType
from streamsift_bench.common import JOIN_MAPPING, JOIN_TABLE, verify_join
from streamsift_bench.isolated_run import batch_summary
from streamsift_bench.measures import drain_rates
from streamsift_bench.report import markdown
from streamsift_bench.run_setup import pipeline_doc
from streamsift_bench.verdicts import ratios, targets

TRUTH = {"expected_rows": 5, "distinct_pairs": 5, "pair_checksum": 777}


def _spec(**over):
    return {
        "name": "drain-dedup-join-abc",
        "bootstrap_servers": "127.0.0.1:9092",
        "topic": "left-topic",
        "window": "1h",
        "work_dir": "/tmp/streamsift-bench-test",
        "max_rows_per_batch": 50_000,
        "dedup": True,
        "join": {"topic": "right-topic", "left_window": "30s", "right_window": "1m"},
        **over,
    }


def test_the_join_pipeline_is_a_valid_dedup_both_sides_inner_join():
    pipeline = parse_pipeline(pipeline_doc(_spec()))
    left, right = pipeline.sources
    assert (left.topic, right.topic) == ("left-topic", "right-topic")
    assert left.dedup.key == right.dedup.key == ("event_id",)
    assert left.dedup.time_window.total_seconds() == right.dedup.time_window.total_seconds() == 3600
    join = pipeline.join
    assert join.type is JoinType.INNER
    assert (join.left.source, join.right.source) == (left.id, right.id)
    assert join.left.key == join.right.key == ("user.id",)
    assert join.left.time_window.total_seconds() == 30
    assert join.right.time_window.total_seconds() == 60
    assert pipeline.sink.table == JOIN_TABLE
    assert [m.column for m in pipeline.sink.mapping] == [m["column"] for m in JOIN_MAPPING]
    assert pipeline.runtime.max_rows_per_batch == 50_000


def test_without_join_the_pipeline_is_the_single_source_one():
    doc = pipeline_doc(_spec(join=None))
    assert "sources" not in doc and "join" not in doc
    assert doc["source"]["topic"] == "left-topic" and doc["dedup"]["key"] == "event_id"


def test_server_mode_and_trigger_reach_the_pipeline():
    embedded = parse_pipeline(pipeline_doc(_spec(join=None)))
    assert embedded.sink.clickhouse.embedded
    assert embedded.sink.max_delay_time.total_seconds() == 1
    for join in (None, _spec()["join"]):
        doc = pipeline_doc(_spec(join=join, max_delay="250ms"), server_port=18123)
        pipeline = parse_pipeline(doc)
        conn = pipeline.sink.clickhouse
        assert not conn.embedded and (conn.host, conn.port) == ("127.0.0.1", 18123)
        assert pipeline.sink.max_delay_time.total_seconds() == 0.25
    assert embedded.runtime.state_store.value == "rocksdb"
    memory = parse_pipeline(pipeline_doc(_spec(state_store="memory")))
    assert memory.runtime.state_store.value == "memory"


def _query(rows, distinct, later_left, later_right, checksum):
    def query(sql):
        if "MD5" in sql:
            return (checksum,)
        return (rows, distinct, later_left, later_right)

    return query


def test_verify_join_needs_rows_pairs_first_versions_and_the_checksum():
    assert verify_join(_query(5, 5, 0, 0, 777), "t", TRUTH)["exact"]
    cases = {
        "a missing row": (4, 4, 0, 0, 777),
        "a doubled row": (6, 5, 0, 0, 777),
        "other pairs, same count": (5, 5, 0, 0, 778),
        "a left re-send joined": (5, 5, 1, 0, 777),
        "a right re-send joined": (5, 5, 0, 1, 777),
    }
    for what, figures in cases.items():
        check = verify_join(_query(*figures), "t", TRUTH)
        assert not check["exact"], what
    check = verify_join(_query(5, 5, 0, 0, 778), "t", TRUTH)
    assert check["pair_checksum_ok"] is False and check["rows"] == check["expected_rows"] == 5


def test_steady_rate_of_the_join_counts_left_messages_only():
    log = {
        0: {"rows": 70, "ms": 5000, "read": 70, "read_by_topic": {"L": 50, "R": 20}},
        1: {"rows": 50, "ms": 1000, "read": 60, "read_by_topic": {"L": 50, "R": 10}},
        2: {"rows": 50, "ms": 1000, "read": 50, "read_by_topic": {"L": 50}},
    }
    for b in log.values():
        b["phases_ms"] = {}
    assert batch_summary(log)["after_first_batch_rate"] == 55.0
    assert batch_summary(log, topic="L")["after_first_batch_rate"] == 50.0


def _results(join_run):
    return {
        "started_at": "now",
        "options": {"payload_bytes": 1024, "partitions": 3, "duplicates": 0.2, "keys": 10},
        "machine": {"cores": 2, "cpu": "", "memory_gb": 1, "python": "3", "versions": {}},
        "drain": {"dedup-join": {**join_run, "rates": drain_rates("streamsift", join_run)}},
        "live": {},
    }


def _finish(results):
    results["ratios"] = ratios(results)
    results["targets"] = targets(results)
    return markdown(results)


def test_an_exact_join_run_reports_left_events_per_second_against_the_target():
    run = {
        "exact": True,
        "events": 200_000,
        "left_events": 200_000,
        "right_events": 20_000,
        "messages": 220_000,
        "read": 220_000,
        "busy_seconds": 8.0,
        "wall_seconds": 20.0,
        "rows": 150_000,
        "expected_rows": 150_000,
        "late_dropped": 0,
        "resources": {"peak_rss_mb": 2000, "cpu_seconds_per_million": 150.0},
    }
    results = _results(run)
    assert results["drain"]["dedup-join"]["rates"]["processing_rate"] == 25_000
    text = _finish(results)
    target = next(t for t in results["targets"] if t["target"].startswith("dedup+join"))
    assert target["measured"] == 25_000 and target["met"] is True
    assert "### Dedup + inner join" in text and "no baseline" in text
    assert "25,000" in text and "27,500" in text  # left events/s; all messages/s
    slow = _results({**run, "busy_seconds": 20.0})
    _finish(slow)
    target = next(t for t in slow["targets"] if t["target"].startswith("dedup+join"))
    assert target["measured"] == 10_000 and target["met"] is False


def test_a_failed_join_run_is_failed_never_a_number():
    run = {
        "exact": False,
        "events": 200_000,
        "left_events": 200_000,
        "busy_seconds": 8.0,
        "wall_seconds": 20.0,
        "rows": 149_999,
        "expected_rows": 150_000,
        "distinct_pairs": 149_999,
        "expected_distinct_pairs": 150_000,
        "later_versions": 0,
        "pair_checksum_ok": False,
    }
    results = _results(run)
    assert results["drain"]["dedup-join"]["rates"]["processing_rate"] is None
    text = _finish(results)
    target = next(t for t in results["targets"] if t["target"].startswith("dedup+join"))
    assert target["measured"] is None and target["met"] is None
    assert "**FAILED**" in text and "pair checksum wrong" in text
    assert "25,000" not in text


def test_without_the_scenario_the_join_target_says_how_to_measure_it():
    results = _results({"exact": True, "events": 1, "busy_seconds": 1, "wall_seconds": 1})
    del results["drain"]["dedup-join"]
    target = next(t for t in targets(results) if t["target"].startswith("dedup+join"))
    assert target["met"] is None and "--scenario dedup-join" in target["note"]


def test_the_joins_first_micro_batch_is_a_target_of_its_own_and_needs_an_exact_run():
    run = {"exact": True, "events": 1, "busy_seconds": 1, "wall_seconds": 1}
    run["first_batch"] = {"rows": 55_914, "seconds": 4.99}
    slow = next(t for t in targets(_results(run)) if t["target"].endswith("first micro-batch"))
    assert (slow["measured"], slow["met"], slow["rows"]) == (4.99, False, 55_914)
    run["first_batch"] = {"rows": 10_000, "seconds": 1.2}
    fast = next(t for t in targets(_results(run)) if t["target"].endswith("first micro-batch"))
    assert fast["met"] is True
    run["exact"] = False
    failed = next(t for t in targets(_results(run)) if t["target"].endswith("first micro-batch"))
    assert (failed["measured"], failed["met"]) == (None, None)
