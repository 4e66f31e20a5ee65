"""Building the streaming DataFrame of a pipeline: sources → (filters, join) → output frame.

The output frame is the seam between the data path and the sink: one column per mapped
ClickHouse column (named and ordered as `sink.mapping`), then the metadata columns in
`OUTPUT_META`. Rows whose `_error` is set are dead letters; the batch writer routes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamsift.config.models import KafkaSource, Pipeline
from streamsift.runtime.processor import SourceProcessor
from streamsift.sources.kafka import KafkaReadSpec, KafkaStreamReader, make_data_source

DEFAULT_MAX_ROWS_PER_BATCH = 200_000

# Metadata every output row carries after the mapped columns (see runtime/processor.py).
OUTPUT_META = ("_topic", "_partition", "_offset", "_kafka_ts", "_late", "_key", "_raw", "_error")


@dataclass
class StreamPlan:
    """The assembled streaming frame plus what the runner needs to report on it."""

    frame: Any
    initial_offsets: dict[str, int] = field(default_factory=dict)


def read_spec(pipeline: Pipeline, source: KafkaSource) -> KafkaReadSpec:
    return KafkaReadSpec(
        bootstrap_servers=source.bootstrap_servers,
        topic=source.topic,
        consumer_group=pipeline.consumer_group,
        start_from=source.start_from.value,
        properties={**source.security.librdkafka(), **source.properties},
        max_rows_per_batch=pipeline.runtime.max_rows_per_batch or DEFAULT_MAX_ROWS_PER_BATCH,
        metadata_timeout_s=source.connect_timeout.total_seconds(),
    )


def source_name(pipeline: Pipeline, source: KafkaSource) -> str:
    """The name a source is registered under in Spark (unique per pipeline and source)."""
    return "streamsift_" + re.sub(r"[^A-Za-z0-9_]", "_", f"{pipeline.name}_{source.id}")


def build_stream(spark: Any, pipeline: Pipeline, checkpoint: Path, new_query: bool) -> StreamPlan:
    """Register the pipeline's source(s) with Spark and return the output frame."""
    from pyspark.sql import functions as F

    src = pipeline.source
    processor = SourceProcessor.build(src.schema_, pipeline.dedup, checkpoint / "dedup")
    spec = read_spec(pipeline, src)
    initial: dict[str, int] = {}
    if new_query:
        # Spark reports no start offsets for a new query's first batch: count from here.
        probe = KafkaStreamReader(spec, processor)
        try:
            initial = probe.initialOffset()
        finally:
            probe.stop()
    name = source_name(pipeline, src)
    spark.dataSource.register(make_data_source(name, spec, processor))
    frame = spark.readStream.format(name).load()
    columns = {f.name: f.column for f in src.schema_.fields}
    mapped = [F.col(columns[m.field]).alias(m.column) for m in pipeline.sink.mapping]
    frame = frame.select(*mapped, *[F.col(c) for c in OUTPUT_META])
    return StreamPlan(frame, initial)
