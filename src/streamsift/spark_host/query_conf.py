"""Spark settings streamsift sets for each query it starts, not once per session.

One SparkSession serves every pipeline of a process (tests, `streamsift serve`), and Spark
reads these when a query starts (each query runs on its own clone of the session's settings),
so `_build_query` sets them right before `start()`. A pipeline's `runtime.spark_conf` naming
one of them wins. They are: the join's state format (4 on RocksDB; 2 on the heap store, which
supports no other; a checkpoint keeps the format it was made with), RocksDB's row count off,
checkpoint files written through Hadoop's FileSystem API, and how long a stop waits for the
query's thread (`runtime.stop_timeout`). No-data micro-batches stay on
(the late-record rule needs them). Why these values, and what they were measured to save or
cost: docs/benchmarks.md, "Per-query Spark settings: why these values".
"""

from __future__ import annotations

from streamsift.config.models import Pipeline, StateStore

JOIN_STATE_FORMAT = "spark.sql.streaming.join.stateFormatVersion"
TRACK_ROWS = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"
CHECKPOINT_FILES = "spark.sql.streaming.checkpointFileManagerClass"
# how long `query.stop()` waits for the query's thread (Spark's default: forever)
STOP_TIMEOUT = "spark.sql.streaming.stopTimeout"
FILE_SYSTEM_CHECKPOINT_FILES = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
# Formats 3 and 4 keep a side's state in column families of one store: RocksDB only.
STATE_FORMAT = {StateStore.ROCKSDB: "4", StateStore.MEMORY: "2"}


def settings_for(state_store: StateStore) -> dict[str, str]:
    """The settings above for a query whose state lives in `state_store`."""
    return {
        JOIN_STATE_FORMAT: STATE_FORMAT[state_store],
        TRACK_ROWS: "false",
        CHECKPOINT_FILES: FILE_SYSTEM_CHECKPOINT_FILES,
    }


def query_conf(pipeline: Pipeline) -> dict[str, str]:
    """The per-query settings for `pipeline` (its own `runtime.spark_conf` taking precedence)."""
    own = pipeline.runtime.spark_conf
    conf = settings_for(pipeline.runtime.state_store)
    conf[STOP_TIMEOUT] = str(int(pipeline.runtime.stop_timeout.total_seconds() * 1000))
    return {key: own.get(key, value) for key, value in conf.items()}
