"""Spark settings streamsift sets for each query it starts, not once per session.

One SparkSession serves every pipeline of a process (tests, `streamsift serve`), and Spark
reads these when a query starts (each query runs on its own clone of the session's settings),
so `_build_query` sets them right before `start()`. A pipeline's `runtime.spark_conf` naming
one of them wins.

- The join's state format (`spark.sql.streaming.join.stateFormatVersion`): 4 on RocksDB (one
  state store per side and partition instead of four, and an event-time index, so evicting
  what the watermark passed costs what is evicted instead of a scan of the whole state); 2 on
  the heap store, which supports no other. Spark records the format in the checkpoint's
  offset log and a resumed query uses the recorded one, so a checkpoint made with format 2
  keeps it.
- `trackTotalNumberOfRows` off: RocksDB state otherwise reads every key before it writes it
  to keep a row count that only Spark's progress report shows (streamsift reads none).
- No-data micro-batches (a batch Spark runs only because the watermark moved, to evict state
  and emit what waited for it) off for inner joins, whose output never waits for the
  watermark: the next batch with data evicts the same state. A left join keeps them: its
  NULL rows come out in such batches (docs/semantics.md).
"""

from __future__ import annotations

from streamsift.config.models import JoinType, Pipeline, StateStore

JOIN_STATE_FORMAT = "spark.sql.streaming.join.stateFormatVersion"
TRACK_ROWS = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
# Formats 3 and 4 keep a side's state in column families of one store: RocksDB only.
STATE_FORMAT = {StateStore.ROCKSDB: "4", StateStore.MEMORY: "2"}


def query_conf(pipeline: Pipeline) -> dict[str, str]:
    """The per-query settings for `pipeline` (its own `runtime.spark_conf` taking precedence)."""
    inner_join = pipeline.join is not None and pipeline.join.type is JoinType.INNER
    conf = {
        JOIN_STATE_FORMAT: STATE_FORMAT[pipeline.runtime.state_store],
        TRACK_ROWS: "false",
        NO_DATA_BATCHES: "false" if inner_join else "true",
    }
    own = pipeline.runtime.spark_conf
    return {key: own.get(key, value) for key, value in conf.items()}
