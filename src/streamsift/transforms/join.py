"""The temporal join of two deduplicated sources, in the same streaming query.

Spark's stream-stream join does the work: watermarks on both sides' `_event_time` (delayed
by `join.allowed_lateness`), equality of the key(s), and the event-time range
`left.t - right.time_window <= right.t <= left.t + left.time_window`, in append mode, inner
or left outer. Spark drops (and counts) records behind the watermark; see docs/semantics.md.
Dead letters reach this point with a null `_event_time` (runtime/processor.py), so they never
move a watermark; that includes records dated far ahead of their Kafka timestamp
(`schema.max_future_skew`), which would otherwise push it past every later record.

Dead letters of both sources must still reach the sink in the same micro-batch, so each
side is split into rows to join and dead letters, which are unioned into the output frame.
Spark scans a streaming source once per use in the plan, and a second scan would parse and
deduplicate every record twice; instead each side is shuffled once by its join key and both
branches read that one shuffle (Spark reuses an identical exchange). Two details keep the
two exchanges identical: the split condition holds a term that is never true but is not
deterministic (`spark_partition_id() < 0`), so the optimizer cannot push the split below the
shuffle, and it names every column, so column pruning leaves the same columns in both.
The shuffle is the one the join needs anyway (the key, `spark.sql.shuffle.partitions`).

Since the split names every column, each side is first pruned to what the join still needs:
its output fields, the join key(s) and the metadata; payload fields nobody reads would
otherwise travel through the shuffle (Spark prunes them after it, so the join state holds
only what is used either way).
"""

from __future__ import annotations

from typing import Any

from streamsift.config.models import FieldRef, FieldType, JoinType, Pipeline

_SPARK_KEY_TYPES = {
    FieldType.STRING: "STRING",
    FieldType.INT: "BIGINT",
    FieldType.FLOAT: "DOUBLE",
    FieldType.BOOL: "BOOLEAN",
    FieldType.TIMESTAMP: "TIMESTAMP",
}


def build_join(
    pipeline: Pipeline, sides: dict[str, tuple[Any, dict[str, FieldRef]]]
) -> tuple[Any, dict[str, FieldRef]]:
    """Join the two sources' frames; return the joined frame (plus dead letters) and its fields.

    `sides` maps a source id to its frame (typed columns, computed fields, metadata) and the
    fields in scope there. The result has one column per `join.output` entry, the metadata
    columns of the output frame, and `_rpartition`/`_roffset` (the matched right record).
    """
    from pyspark.sql import functions as F

    join = pipeline.join
    assert join is not None
    left_frame, left_scope = sides[join.left.source]
    right_frame, right_scope = sides[join.right.source]
    lateness = f"{int(join.lateness.total_seconds() * 1_000_000)} microseconds"

    key_types = []
    for lk, rk in zip(join.left.key, join.right.key, strict=True):
        lt, rt = left_scope[lk].type, right_scope[rk].type
        key_types.append(_SPARK_KEY_TYPES[FieldType.FLOAT if lt != rt else lt])

    def prepared(frame: Any, scope: dict[str, FieldRef], keys: tuple[str, ...], side: str) -> Any:
        frame = frame.withColumns(
            {f"_jk{i}": F.col(scope[k].column).cast(key_types[i]) for i, k in enumerate(keys)}
        )
        used = {scope[o.field].column for o in join.output if o.from_ == side}
        payload = {ref.column for name, ref in scope.items() if not name.startswith("_kafka.")}
        frame = frame.drop(*sorted(payload - used))
        frame = frame.withWatermark("_event_time", lateness)
        frame = frame.repartition(*[F.col(f"_jk{i}") for i in range(len(keys))])
        every_column = ", ".join(f"`{c}`" for c in frame.columns)
        split = F.expr(
            "_error IS NULL OR (spark_partition_id() < 0 AND "
            f"length(CAST(struct({every_column}) AS STRING)) < 0)"
        )
        return frame.withColumn("_ok", split)

    left = prepared(left_frame, left_scope, join.left.key, "left")
    right = prepared(right_frame, right_scope, join.right.key, "right")

    window_l = int(join.left.time_window.total_seconds() * 1_000_000)
    window_r = int(join.right.time_window.total_seconds() * 1_000_000)
    condition = F.expr(
        f"r._event_time >= l._event_time - INTERVAL {window_r} MICROSECONDS AND "
        f"r._event_time <= l._event_time + INTERVAL {window_l} MICROSECONDS"
    )
    for i in range(len(join.left.key)):
        condition = condition & (F.col(f"l._jk{i}") == F.col(f"r._jk{i}"))
    how = "inner" if join.type is JoinType.INNER else "leftouter"
    joined = left.filter("_ok").alias("l").join(right.filter("_ok").alias("r"), condition, how)

    scope: dict[str, FieldRef] = {}
    outputs = []
    for out in join.output:
        side_scope = left_scope if out.from_ == "left" else right_scope
        ref = side_scope[out.field]
        prefix = "l" if out.from_ == "left" else "r"
        outputs.append(F.col(f"{prefix}.{ref.column}").alias(out.column))
        scope[out.name] = FieldRef(out.name, out.column, ref.type)
    null_outputs = [
        F.lit(None).cast(_spark_type(ref.type)).alias(ref.column) for ref in scope.values()
    ]

    pairs = joined.select(
        *outputs,
        *[F.col(f"l.{c}").alias(c) for c in ("_topic", "_partition", "_offset", "_kafka_ts")],
        F.col("l._late").alias("_late"),
        F.lit(None).cast("binary").alias("_key"),
        F.lit(None).cast("binary").alias("_raw"),
        F.lit(None).cast("string").alias("_error"),
        F.lit(None).cast("string").alias("_stage"),
        F.lit(join.left.source).alias("_source"),
        F.coalesce(F.col("r._partition"), F.lit(-1)).cast("int").alias("_rpartition"),
        F.coalesce(F.col("r._offset"), F.lit(-1)).cast("long").alias("_roffset"),
    )

    def dead_letters(frame: Any) -> Any:
        return frame.filter(~F.col("_ok")).select(
            *null_outputs,
            "_topic",
            "_partition",
            "_offset",
            "_kafka_ts",
            "_late",
            "_key",
            "_raw",
            "_error",
            "_stage",
            "_source",
            F.lit(-1).cast("int").alias("_rpartition"),
            F.lit(-1).cast("long").alias("_roffset"),
        )

    frame = pairs.unionByName(dead_letters(left)).unionByName(dead_letters(right))
    return frame, scope


def payload_of_joined_rows(frame: Any, scope: dict[str, FieldRef]) -> Any:
    """Dead letters made after the join carry the joined fields as JSON (no raw message)."""
    from pyspark.sql import functions as F

    record = F.to_json(F.struct(*[F.col(ref.column).alias(ref.name) for ref in scope.values()]))
    return frame.withColumn(
        "_raw",
        F.when(
            F.col("_error").isNotNull() & F.col("_raw").isNull() & ~F.col("_pre_error"),
            F.encode(record, "UTF-8"),
        ).otherwise(F.col("_raw")),
    ).drop("_pre_error")


def _spark_type(ftype: FieldType) -> str:
    return {
        FieldType.STRING: "string",
        FieldType.INT: "bigint",
        FieldType.FLOAT: "double",
        FieldType.BOOL: "boolean",
        FieldType.TIMESTAMP: "timestamp",
        FieldType.ARRAY: "array<string>",
        FieldType.MAP: "map<string,string>",
        FieldType.JSON: "string",
    }[ftype]
