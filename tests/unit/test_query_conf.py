"""The Spark settings each query gets (runtime/query_conf.py): join state format by store,
no-data micro-batches off only where no output waits for the watermark, the pipeline's own
`runtime.spark_conf` first."""

from __future__ import annotations

from streamsift.bench.worker import pipeline_doc
from streamsift.config import parse_pipeline
from streamsift.runtime.query_conf import (
    JOIN_STATE_FORMAT,
    NO_DATA_BATCHES,
    TRACK_ROWS,
    query_conf,
)

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


def test_an_inner_join_on_rocksdb_gets_format_4_and_no_empty_batches():
    assert _conf() == {JOIN_STATE_FORMAT: "4", TRACK_ROWS: "false", NO_DATA_BATCHES: "false"}


def test_a_left_join_keeps_the_batches_that_emit_its_null_rows():
    assert _conf("left")[NO_DATA_BATCHES] == "true"
    assert _conf("left")[JOIN_STATE_FORMAT] == "4"


def test_a_single_source_pipeline_keeps_sparks_default_batches():
    assert _conf(join=False)[NO_DATA_BATCHES] == "true"


def test_state_on_the_heap_keeps_format_2_the_only_one_it_supports():
    assert _conf(state_store="memory")[JOIN_STATE_FORMAT] == "2"


def test_the_pipelines_own_spark_conf_wins():
    own = {JOIN_STATE_FORMAT: "3", NO_DATA_BATCHES: "true"}
    conf = _conf(spark_conf=own)
    assert conf == {JOIN_STATE_FORMAT: "3", TRACK_ROWS: "false", NO_DATA_BATCHES: "true"}
