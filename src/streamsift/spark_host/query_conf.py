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
- Checkpoint files through Hadoop's FileSystem API instead of its FileContext API. Both write
  a temporary file and rename it into place; FileContext's rename first asks for each path's
  link status, which Hadoop (without its native library, as pip's PySpark ships it) answers
  by running `readlink` as a child process of the JVM: about twenty processes per micro-batch
  for the offset and commit logs. The FileSystem API renames with `java.io.File.renameTo`,
  atomic on a local disk (streamsift's checkpoints are local paths); the two `chmod` processes
  per file created remain.

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
CHECKPOINT_FILES = "spark.sql.streaming.checkpointFileManagerClass"
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
    return {key: own.get(key, value) for key, value in conf.items()}
