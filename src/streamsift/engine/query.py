"""Building the streaming DataFrame of a pipeline: sources → (filters, join) → output frame.

The output frame is the seam between the data path and the sink: one column per mapped
ClickHouse column (named and ordered as `sink.mapping`), then the metadata columns
`OUTPUT_COLUMNS` (config/rows.py). Rows whose `_error` is set are dead letters (`_stage`
says where they failed, `_source` which source they came from); the batch writer routes them.

Sorting the rows of a batch by `SORT_KEY` (config/rows.py; all non-null) gives the same
order on every re-run: a joined row is identified by its left record (topic, partition,
offset) and its right record (`_rpartition`, `_roffset`, -1 when there is none, e.g. a
left-outer row, a dead letter or a single-source pipeline; after a chain of joins, the last
step's partition and a hash of every step's right record: transforms/join/plan.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from streamsift.config.models import (
    Dedup,
    FieldRef,
    JoinMode,
    KafkaSource,
    NewFields,
    Pipeline,
    source_scope,
)
from streamsift.config.rows import NO_RECORD, OUTPUT_COLUMNS, PRE_ERROR, RIGHT_RECORD_COLUMNS
from streamsift.engine.arrow_passthrough import PassThroughProcessor, use_pass_through
from streamsift.engine.checkpoint import batch_watermark, latest_join_by_key, latest_join_in_spark
from streamsift.engine.processor import SourceProcessor
from streamsift.engine.registry_fields import schema_lookup
from streamsift.sources.kafka import KafkaStreamReader, make_data_source
from streamsift.sources.kafka_spec import KafkaReadSpec
from streamsift.transforms.expressions import Stage, apply_stage, drop_raw_of_good_rows

DEFAULT_MAX_ROWS_PER_BATCH = 200_000
# A single-source live query with nothing new waits this long for news before it plans
# (sources/end_watch.py `wait_beyond`): an idle pipeline's triggers then cost a fraction.
IDLE_WAIT_S = 2.0
WAKE_FILE = "stopping"  # beside the checkpoint while its run stops: ends an idle wait at once


@dataclass
class StreamPlan:
    """The assembled streaming frame plus what the runner needs to report on it."""

    frame: Any
    initial_offsets: dict[str, int] = field(default_factory=dict)
    # The Arrow pass-through (engine/arrow_passthrough.py): the output frame's Arrow schema;
    # the frame's rows then carry serialized chunks of it. None: the frame holds the rows.
    arrow_schema: Any = None
    # A join run in foreachBatch (transforms/join/latest_arrow.py): `frame` holds its input.
    batch_join: BatchJoin | None = None

    @property
    def data_path(self) -> str:
        return data_path_of(self.arrow_schema)


def data_path_of(arrow_schema: Any) -> str:
    """The data path's name: arrow (the pass-through's chunks of `arrow_schema`) or rows."""
    return "arrow" if arrow_schema is not None else "rows"


def read_spec(pipeline: Pipeline, source: KafkaSource) -> KafkaReadSpec:
    return KafkaReadSpec(
        bootstrap_servers=source.bootstrap_servers,
        topic=source.topic,
        consumer_group=pipeline.consumer_group,
        start_from=source.start_from.value,
        properties={**source.security.librdkafka(), **source.properties},
        max_rows_per_batch=pipeline.runtime.max_rows_per_batch or DEFAULT_MAX_ROWS_PER_BATCH,
        metadata_timeout_s=source.connect_timeout.total_seconds(),
        read_timeout_s=source.read_timeout.total_seconds(),
    )


def source_name(pipeline: Pipeline, source: KafkaSource) -> str:
    """The name a source is registered under in Spark (unique per pipeline and source)."""
    return "streamsift_" + re.sub(r"[^A-Za-z0-9_]", "_", f"{pipeline.name}_{source.id}")


def build_stream(
    spark: Any,
    pipeline: Pipeline,
    checkpoint: Path,
    new_query: bool,
    state_url: str | None = None,
) -> StreamPlan:
    """Register the pipeline's source(s) with Spark and return the output frame. `state_url`:
    the dedup state's shared location (transforms/dedup/carry_over.py `state_location`)."""
    initial: dict[str, int] = {}
    if pipeline.join is not None:
        from streamsift.transforms.join.plan import build_join

        sides = {}
        for i, src in enumerate(pipeline.sources or ()):
            stage = Stage(src.transform, src.filter, f"sources[{i}].")
            frame = read_source(
                spark, pipeline, src, src.dedup, stage, checkpoint, new_query, initial, state_url
            )
            sides[src.id] = (frame, _scope_after(source_scope(src), stage))
        if arrow_latest(pipeline, checkpoint / "spark", new_query):
            from streamsift.transforms.join.latest_arrow import clear_latest_state
            from streamsift.transforms.join.plan import build_arrow_latest

            location = state_url or str(checkpoint)
            if new_query:
                clear_latest_state(location)
            frame, scope, arrow_join = build_arrow_latest(pipeline, sides, location)
            batch_join = BatchJoin(arrow_join, pipeline, scope, checkpoint / "spark")
            return StreamPlan(frame, initial, batch_join=batch_join)
        # a checkpoint from before latest joins kept their keys in buckets keeps its layout
        by_key = not new_query and latest_join_by_key(checkpoint / "spark")
        frame, scope = build_join(pipeline, sides, by_key)
        return StreamPlan(after_join(frame, pipeline, scope), initial)

    (src,) = pipeline.inputs
    stage = Stage(pipeline.transform, pipeline.filter)
    if use_pass_through(pipeline, stage.empty):
        processor = pass_through_processor(pipeline, checkpoint, state_url)
        frame = register_source(spark, pipeline, src, processor, new_query, initial, checkpoint)
        return StreamPlan(frame, initial, processor.output_schema)
    frame = read_source(
        spark, pipeline, src, pipeline.dedup, stage, checkpoint, new_query, initial, state_url
    )
    return StreamPlan(
        output_frame(frame, pipeline, _scope_after(source_scope(src), stage)), initial
    )


def after_join(frame: Any, pipeline: Pipeline, scope: dict[str, FieldRef]) -> Any:
    """The joined rows (and dead letters) through the stage after the join, as the output
    frame."""
    from pyspark.sql import functions as F

    from streamsift.transforms.join.plan import payload_of_joined_rows

    after = Stage(pipeline.transform, pipeline.filter)
    if not after.empty:
        frame = frame.withColumn(PRE_ERROR, F.col("_error").isNotNull())
        frame = apply_stage(frame, after, scope)
        scope = _scope_after(scope, after)
        frame = payload_of_joined_rows(frame, scope)
    return output_frame(frame, pipeline, scope)


def arrow_latest(pipeline: Pipeline, spark_checkpoint: Path, new_query: bool) -> bool:
    """Whether the pipeline's join runs on Arrow batches with state streamsift keeps
    (transforms/join/latest_arrow.py): a single `mode: latest` join on a checkpoint that holds
    no latest join state of Spark's (written by a streamsift from before: it keeps that)."""
    steps = pipeline.joins
    if len(steps) != 1 or steps[0].mode is not JoinMode.LATEST:
        return False
    return new_query or not latest_join_in_spark(spark_checkpoint)


@dataclass(frozen=True)
class BatchJoin:
    """A join run on each micro-batch in foreachBatch (transforms/join/latest_arrow.py), and
    the stages after it."""

    join: Any  # ArrowLatestJoin
    pipeline: Pipeline
    scope: dict[str, FieldRef]
    spark_checkpoint: Path

    def frame(self, df: Any, batch_id: int) -> Any:
        """The micro-batch's output frame."""
        watermarks = (
            batch_watermark(self.spark_checkpoint, batch_id - 1),
            batch_watermark(self.spark_checkpoint, batch_id),
        )
        joined = self.join.joined(df, batch_id, watermarks)
        return after_join(joined, self.pipeline, self.scope)

    def late(self, batch_id: int) -> int:
        """Records the micro-batch dropped behind the join's watermark."""
        return int(self.join.late(batch_id))


def read_source(
    spark: Any,
    pipeline: Pipeline,
    src: KafkaSource,
    dedup: Dedup | None,
    stage: Stage,
    checkpoint: Path,
    new_query: bool,
    initial: dict[str, int],
    state_url: str | None = None,
) -> Any:
    """One Kafka source as a streaming frame: parsed, deduplicated, transformed, filtered.

    Adds `_stage` ('parse' on dead letters from the source) and `_source` (the source's id).
    Rows keep their raw message only while a filter or computed field may still send them to
    the DLQ; past that, only dead letters hold it. (A row ClickHouse refuses has its message
    read back from Kafka by its position: engine/batch_writer.py.)
    """
    from pyspark.sql import functions as F

    processor = source_processor(pipeline, src, dedup, stage, checkpoint, state_url)
    frame = register_source(spark, pipeline, src, processor, new_query, initial, checkpoint)
    frame = frame.withColumns(
        {
            "_stage": F.when(F.col("_error").isNotNull(), F.lit("parse")),
            "_source": F.lit(src.id),
        }
    )
    if not stage.empty:
        frame = drop_raw_of_good_rows(apply_stage(frame, stage, source_scope(src)))
    return frame


def source_processor(
    pipeline: Pipeline,
    src: KafkaSource,
    dedup: Dedup | None,
    stage: Stage,
    checkpoint: Path,
    state_url: str | None,
) -> SourceProcessor:
    """Parse + check + dedup of one source, run on the executors."""
    return SourceProcessor.build(
        src.schema_,
        dedup,
        checkpoint / "dedup",
        keep_raw=not stage.empty,
        source_format=src.format.value,
        schemas=schema_lookup(src),
        state_url=state_url,
        flag_new_fields=pipeline.sink.on_new_fields is not NewFields.IGNORE,
        tombstones=any(
            step.mode is JoinMode.TABLE and step.right.source == src.id for step in pipeline.joins
        ),
    )


def pass_through_processor(
    pipeline: Pipeline, checkpoint: Path, state_url: str | None
) -> PassThroughProcessor:
    """The processor of a single-source pipeline without Spark stages (arrow_passthrough.py)."""
    (src,) = pipeline.inputs
    scope = source_scope(src)
    return PassThroughProcessor(
        source_processor(pipeline, src, pipeline.dedup, Stage(), checkpoint, state_url),
        tuple((scope[m.field].column, m.column) for m in pipeline.sink.mapping),
        src.id,
    )


def register_source(
    spark: Any,
    pipeline: Pipeline,
    src: KafkaSource,
    processor: Any,
    new_query: bool,
    initial: dict[str, int],
    checkpoint: Path,
) -> Any:
    """Register the source with Spark under its name and return its streaming frame."""
    spec = read_spec(pipeline, src)
    if len(pipeline.inputs) == 1:  # a query of several sources: one idle must not hold up all
        spec = replace(spec, idle_wait_s=IDLE_WAIT_S, wake_file=str(checkpoint / WAKE_FILE))
    if new_query:
        # Spark reports no start offsets for a new query's first batch: count from here.
        probe = KafkaStreamReader(spec, processor)
        try:
            initial.update(probe.initialOffset())
        finally:
            probe.stop()
    name = source_name(pipeline, src)
    spark.dataSource.register(make_data_source(name, spec, processor))
    return spark.readStream.format(name).load()


def _scope_after(scope: dict[str, FieldRef], stage: Stage) -> dict[str, FieldRef]:
    scope = dict(scope)
    for t in stage.transforms:
        scope[t.name] = FieldRef(t.name, t.name, t.type)
    return scope


def output_frame(frame: Any, pipeline: Pipeline, scope: dict[str, FieldRef]) -> Any:
    """Select the mapped columns (as named in the sink) and the metadata columns."""
    from pyspark.sql import functions as F

    mapped = [F.col(scope[m.field].column).alias(m.column) for m in pipeline.sink.mapping]
    no_right_record = {  # a single-source pipeline's rows
        c.name: F.lit(NO_RECORD).cast(c.sql_type).alias(c.name)
        for c in RIGHT_RECORD_COLUMNS
        if c.name not in frame.columns
    }
    meta = [no_right_record.get(c.name, F.col(c.name)) for c in OUTPUT_COLUMNS]
    return frame.select(*mapped, *meta)
