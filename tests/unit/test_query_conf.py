"""The Spark settings each query gets (runtime/query_conf.py): join state format by store,
RocksDB's row count off, the pipeline's own `runtime.spark_conf` first."""

from __future__ import annotations

from streamsift.bench.worker import pipeline_doc
from streamsift.config import parse_pipeline
from streamsift.runtime.query_conf import JOIN_STATE_FORMAT, TRACK_ROWS, query_conf

SPEC = {
    "name": "q",
    "bootstrap_servers": "127.0.0.1:9092",
    "topic": "left",
    "work_dir": "/tmp/streamsift-query-conf",
    "dedup": True,
    "join": {"topic": "right", "left_window": "30s", "right_window": "1m"},
}


def _conf(how: str = "inner", join: bool = True, **runtime) -> dict[str, str]:
    doc = pipeline_doc({**SPEC, "join": SPEC["join"] if join else None})
    if join:
        doc["join"]["type"] = how
    doc["runtime"].update(runtime)
    return query_conf(parse_pipeline(doc))


def test_a_join_on_rocksdb_gets_format_4_and_no_row_count():
    for how in ("inner", "left"):
        assert _conf(how) == {JOIN_STATE_FORMAT: "4", TRACK_ROWS: "false"}
    assert _conf(join=False)[JOIN_STATE_FORMAT] == "4"  # recorded; used by no operator


def test_state_on_the_heap_keeps_format_2_the_only_one_it_supports():
    assert _conf(state_store="memory")[JOIN_STATE_FORMAT] == "2"


def test_the_pipelines_own_spark_conf_wins():
    own = {JOIN_STATE_FORMAT: "3", "spark.sql.shuffle.partitions": "1"}
    assert _conf(spark_conf=own) == {JOIN_STATE_FORMAT: "3", TRACK_ROWS: "false"}
