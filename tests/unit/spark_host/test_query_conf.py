"""The Spark settings each query gets (spark_host/query_conf.py): join state format by store,
RocksDB's row count off, checkpoint files through the FileSystem API, the pipeline's own
`runtime.spark_conf` first."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark

from streamsift.config import parse_pipeline
from streamsift.spark_host.query_conf import (
    CHECKPOINT_FILES,
    FILE_SYSTEM_CHECKPOINT_FILES,
    JOIN_STATE_FORMAT,
    STOP_TIMEOUT,
    TRACK_ROWS,
    query_conf,
)
from streamsift_bench.run_setup import pipeline_doc

DEFAULTS = {
    CHECKPOINT_FILES: FILE_SYSTEM_CHECKPOINT_FILES,
    TRACK_ROWS: "false",
    STOP_TIMEOUT: "30000",  # runtime.stop_timeout's default, in ms
}

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
        assert _conf(how) == {**DEFAULTS, JOIN_STATE_FORMAT: "4"}
    assert _conf(join=False)[JOIN_STATE_FORMAT] == "4"  # recorded; used by no operator


def test_state_on_the_heap_keeps_format_2_the_only_one_it_supports():
    assert _conf(state_store="memory")[JOIN_STATE_FORMAT] == "2"


def test_the_pipelines_own_spark_conf_wins():
    own = {JOIN_STATE_FORMAT: "3", "spark.sql.shuffle.partitions": "1"}
    assert _conf(spark_conf=own) == {**DEFAULTS, JOIN_STATE_FORMAT: "3"}


def test_the_checkpoint_file_manager_is_a_class_of_the_installed_spark():
    """Spark moved this class between packages before; a wrong name fails every query."""
    jars = Path(pyspark.__file__).parent / "jars"
    entry = FILE_SYSTEM_CHECKPOINT_FILES.replace(".", "/") + ".class"
    found = []
    for jar in jars.glob("spark-sql_*.jar"):
        with zipfile.ZipFile(jar) as archive:
            if entry in archive.namelist():
                found.append(jar.name)
    assert found, f"{FILE_SYSTEM_CHECKPOINT_FILES} is in no spark-sql jar under {jars}"
