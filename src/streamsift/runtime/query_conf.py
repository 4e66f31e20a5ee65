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

No-data micro-batches (a batch Spark runs only because the watermark moved) stay on, also for
inner joins, whose rows never wait for them: Spark drops a record as late against the
watermark of the micro-batch before, and without such a batch at the end of a run, the next
run would compare its records with a watermark one batch older and join records the
documented rule drops (docs/semantics.md, "Late records"). Measured cost: one micro-batch
floor per drain (~4% of a 200,000-event dedup-join drain).
"""

from __future__ import annotations

from streamsift.config.models import Pipeline, StateStore

JOIN_STATE_FORMAT = "spark.sql.streaming.join.stateFormatVersion"
TRACK_ROWS = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"
# Formats 3 and 4 keep a side's state in column families of one store: RocksDB only.
STATE_FORMAT = {StateStore.ROCKSDB: "4", StateStore.MEMORY: "2"}


def query_conf(pipeline: Pipeline) -> dict[str, str]:
    """The per-query settings for `pipeline` (its own `runtime.spark_conf` taking precedence)."""
    conf = {
        JOIN_STATE_FORMAT: STATE_FORMAT[pipeline.runtime.state_store],
        TRACK_ROWS: "false",
    }
    own = pipeline.runtime.spark_conf
    return {key: own.get(key, value) for key, value in conf.items()}
