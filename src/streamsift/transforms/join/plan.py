"""The temporal join of two deduplicated sources, in the same streaming query.

Spark's stream-stream join does the work: watermarks on both sides' `_event_time` (delayed
by `join.allowed_lateness`), equality of the key(s), and the event-time range
`left.t - right.time_window <= right.t <= left.t + left.time_window`, in append mode, inner
or left outer. Spark drops (and counts) records behind the watermark; see docs/semantics.md.
`mode: latest` and `mode: table` go through transforms/join/latest.py instead, and a single
latest join on a new checkpoint through latest_arrow.py (`build_arrow_latest`); a table side
has no watermark (the left's alone moves time) and its tombstones take their key from the
Kafka key.
Dead letters reach this point with a null `_event_time` (engine/processor.py), so they never
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

from datetime import timedelta
from typing import Any

from streamsift.config.models import FieldRef, Join, JoinType, Pipeline
from streamsift.config.rows import (
    JOIN_SPLIT,
    NO_RECORD,
    OUTPUT_COLUMNS,
    PRE_ERROR,
    RIGHT_RECORD_COLUMNS,
    MetaColumn,
    join_key_column,
)
from streamsift.config.stages import JoinMode
from streamsift.config.types import SPARK_SQL_TYPES, FieldType
from streamsift.transforms.join.latest import (
    CHAIN,
    CHAIN_TIME,
    TOMBSTONE,
    ChainStep,
    chain_columns,
)


def build_join(
    pipeline: Pipeline,
    sides: dict[str, tuple[Any, dict[str, FieldRef]]],
    latest_by_key: bool = False,
) -> tuple[Any, dict[str, FieldRef]]:
    """Join the sources' frames; return the joined frame (plus dead letters) and its fields.

    `sides` maps a source id to its frame (typed columns, computed fields, metadata) and the
    fields in scope there. The result has one column per output entry of the (last) join
    step, the metadata columns of the output frame, and `_rpartition`/`_roffset` (the matched
    right record; in a chain, the last step's partition and a hash of every step's position).
    A chain (`join` as a list) runs its steps one after the other in the same query: step k's
    left side is step k-1's rows (docs/semantics.md, "A chain of joins").
    `latest_by_key`: the checkpoint holds `mode: latest` state grouped by key, as written
    before its keys went into buckets (latest_buckets.py): keep that layout.
    """
    from pyspark.sql import functions as F

    steps = pipeline.joins
    left_source = steps[0].left.source or ""
    frame, scope = sides[left_source]
    letters: list[Any] = []
    slack = timedelta(0)
    for k, join in enumerate(steps):
        chain = None
        if len(steps) > 1:
            chain = ChainStep(k > 0, k < len(steps) - 1, _micros(slack))
            slack += join.left_window
        right_frame, right_scope = sides[join.right.source or ""]
        frame, scope, dead = _join_step(
            join, frame, scope, right_frame, right_scope, left_source, chain, latest_by_key
        )
        letters += dead
    null_outputs = [
        F.lit(None).cast(SPARK_SQL_TYPES[ref.type]).alias(ref.column) for ref in scope.values()
    ]
    no_right_record = {
        c.name: F.lit(NO_RECORD).cast(c.sql_type).alias(c.name) for c in RIGHT_RECORD_COLUMNS
    }
    meta = [no_right_record.get(c.name, F.col(c.name)) for c in OUTPUT_COLUMNS]
    for dead in letters:
        frame = frame.unionByName(dead.filter(~F.col(JOIN_SPLIT)).select(*null_outputs, *meta))
    return frame, scope


def _join_step(
    join: Join,
    left_frame: Any,
    left_scope: dict[str, FieldRef],
    right_frame: Any,
    right_scope: dict[str, FieldRef],
    left_source: str,
    chain: ChainStep | None,
    latest_by_key: bool,
) -> tuple[Any, dict[str, FieldRef], list[Any]]:
    """One join (or chain step): its joined rows, their fields, and the frames whose dead
    letters (rows with JOIN_SPLIT false) go to the sink as they are: the sides read from
    sources (a chain step's left side, the previous step's rows, has none)."""
    from pyspark.sql import functions as F

    key_types = _key_types(join, left_scope, right_scope)
    left_is_step = chain is not None and chain.left_is_step
    if left_is_step:
        left = left_frame.withColumns(
            {
                join_key_column(i): F.col(left_scope[k].column).cast(key_types[i])
                for i, k in enumerate(join.left.key)
            }
        ).withColumn(JOIN_SPLIT, F.lit(True))
    else:
        left = _prepared(join, left_frame, left_scope, "left", key_types, latest_by_key)
    right = _prepared(join, right_frame, right_scope, "right", key_types, latest_by_key)

    if join.mode is not JoinMode.INTERVAL:
        from streamsift.transforms.join.latest import latest_pairs

        pairs, scope = latest_pairs(
            join,
            left.filter(JOIN_SPLIT),
            right.filter(JOIN_SPLIT),
            left_scope,
            right_scope,
            left_source,
            chain,
            latest_by_key,
        )
    else:
        pairs, scope = _interval_pairs(join, left, right, left_scope, right_scope, chain)
    return pairs, scope, [right] if left_is_step else [left, right]


def _key_types(
    join: Join, left_scope: dict[str, FieldRef], right_scope: dict[str, FieldRef]
) -> list[str]:
    """The SQL type each join key is compared in: its own, or FLOAT where the sides differ."""
    types = []
    for lk, rk in zip(join.left.key, join.right.key, strict=True):
        lt, rt = left_scope[lk].type, right_scope[rk].type
        types.append(SPARK_SQL_TYPES[FieldType.FLOAT if lt != rt else lt])
    return types


def _prepared(
    join: Join,
    frame: Any,
    scope: dict[str, FieldRef],
    side: str,
    key_types: list[str],
    latest_by_key: bool,
) -> Any:
    """A source's side of a join: key columns, unused payload dropped, its watermark, one
    shuffle by the key, and JOIN_SPLIT (see the module docstring)."""
    from pyspark.sql import functions as F

    table = join.mode is JoinMode.TABLE
    keys = join.left.key if side == "left" else join.right.key
    frame = frame.withColumns(
        {join_key_column(i): F.col(scope[k].column).cast(key_types[i]) for i, k in enumerate(keys)}
    )
    if table and side == "right":  # a tombstone's key is its Kafka key, as text
        frame = frame.withColumns(
            {
                join_key_column(0): F.when(
                    F.expr(TOMBSTONE),
                    F.expr(f"try_cast(CAST(_key AS STRING) AS {key_types[0]})"),
                ).otherwise(F.col(join_key_column(0)))
            }
        )
    used = {scope[o.field].column for o in join.output if o.from_ == side}
    payload = {ref.column for name, ref in scope.items() if not name.startswith("_kafka.")}
    frame = frame.drop(*sorted(payload - used))
    if not (table and side == "right"):  # a table's time does not hold the left back
        frame = frame.withWatermark("_event_time", f"{_micros(join.lateness)} microseconds")
    key_columns = [join_key_column(i) for i in range(len(keys))]
    if join.mode is JoinMode.LATEST and not latest_by_key:  # join/latest_buckets.py
        from streamsift.transforms.join.latest_buckets import BUCKET, with_bucket

        frame = with_bucket(frame, key_columns).repartition(F.col(BUCKET))
    else:
        frame = frame.repartition(*[F.col(k) for k in key_columns])
    every_column = ", ".join(f"`{c}`" for c in frame.columns)
    split = F.expr(
        "_error IS NULL OR (spark_partition_id() < 0 AND "
        f"length(CAST(struct({every_column}) AS STRING)) < 0)"
    )
    return frame.withColumn(JOIN_SPLIT, split)


def _micros(duration: timedelta) -> int:
    return int(duration.total_seconds() * 1_000_000)


def _interval_pairs(
    join: Join,
    left: Any,
    right: Any,
    left_scope: dict[str, FieldRef],
    right_scope: dict[str, FieldRef],
    chain: ChainStep | None = None,
) -> tuple[Any, dict[str, FieldRef]]:
    """`join.mode: interval`: Spark's stream-stream join, every pair inside the windows. In a
    chain, a step that feeds the next gives its rows `_event_time` (the left row's,
    watermarked), CHAIN_TIME and CHAIN; a later step measures the windows on its left rows'
    CHAIN_TIME (docs/semantics.md, "A chain of joins", "Which modes")."""
    from pyspark.sql import functions as F

    window_l = _micros(join.left_window)
    window_r = _micros(join.right_window)
    left_is_step = chain is not None and chain.left_is_step
    # a later step's left rows: Spark's event time `e` (watermarked) is within the slack
    # after their time tl (CHAIN_TIME); the range on `e`, widened by the slack, is what Spark
    # bounds its state by, and the exact range on tl decides the rows
    wide_r = window_r + (chain.slack_us if left_is_step and chain is not None else 0)
    condition = F.expr(
        f"r._event_time >= l._event_time - INTERVAL {wide_r} MICROSECONDS AND "
        f"r._event_time <= l._event_time + INTERVAL {window_l} MICROSECONDS"
    )
    if left_is_step:
        tl_sql = f"timestamp_micros(l.{CHAIN_TIME})"
        condition = condition & F.expr(
            f"r._event_time >= {tl_sql} - INTERVAL {window_r} MICROSECONDS AND "
            f"r._event_time <= {tl_sql} + INTERVAL {window_l} MICROSECONDS"
        )
    for i in range(len(join.left.key)):
        key = join_key_column(i)
        condition = condition & (F.col(f"l.{key}") == F.col(f"r.{key}"))
    how = "inner" if join.type is JoinType.INNER else "leftouter"
    joined = (
        left.filter(JOIN_SPLIT).alias("l").join(right.filter(JOIN_SPLIT).alias("r"), condition, how)
    )

    scope: dict[str, FieldRef] = {}
    outputs = []
    for out in join.output:
        side_scope = left_scope if out.from_ == "left" else right_scope
        ref = side_scope[out.field]
        prefix = "l" if out.from_ == "left" else "r"
        outputs.append(F.col(f"{prefix}.{ref.column}").alias(out.column))
        scope[out.name] = FieldRef(out.name, out.column, ref.type)
    left_source = join.left.source or ""
    meta = [_of_joined_row(c, left_source) for c in OUTPUT_COLUMNS]
    if chain is None:
        return joined.select(*outputs, *meta), scope
    left_chain = F.col(f"l.{CHAIN}") if left_is_step else None
    extra = chain_columns(chain, F.col("r._partition"), F.col("r._offset"), left_chain)
    if chain.feeds_next:
        tl = F.col(f"l.{CHAIN_TIME}") if left_is_step else F.unix_micros(F.col("l._event_time"))
        extra = {"_event_time": F.col("l._event_time"), **extra, CHAIN_TIME: tl}
    else:  # the last step: `_roffset` is the hash of every step's right position
        meta = [
            extra.pop(c.name).alias(c.name) if c.name in extra else m
            for c, m in zip(OUTPUT_COLUMNS, meta, strict=True)
        ]
    return joined.select(*outputs, *meta, *[v.alias(n) for n, v in extra.items()]), scope


def payload_of_joined_rows(frame: Any, scope: dict[str, FieldRef]) -> Any:
    """Dead letters made after the join carry the joined fields as JSON (no raw message)."""
    from pyspark.sql import functions as F

    record = F.to_json(F.struct(*[F.col(ref.column).alias(ref.name) for ref in scope.values()]))
    return frame.withColumn(
        "_raw",
        F.when(
            F.col("_error").isNotNull() & F.col("_raw").isNull() & ~F.col(PRE_ERROR),
            F.encode(record, "UTF-8"),
        ).otherwise(F.col("_raw")),
    ).drop(PRE_ERROR)


def _of_joined_row(column: MetaColumn, left_source: str) -> Any:
    """A metadata column of a matched pair (`column.joined`): its left record's position,
    times and source, the right record's position (NO_RECORD for a left-outer row without
    one), no raw message and no error."""
    from pyspark.sql import functions as F

    if column.name == "_source":
        # The left source's id as a literal, not `l._source`: the columns read above the join
        # decide what its state holds, and a checkpoint keeps that state's schema.
        value = F.lit(left_source)
    elif column.joined is None:
        value = F.lit(None).cast(column.sql_type)
    elif column in RIGHT_RECORD_COLUMNS:
        value = F.coalesce(F.col(column.joined), F.lit(NO_RECORD)).cast(column.sql_type)
    else:
        value = F.col(column.joined)
    return value.alias(column.name)


def build_arrow_latest(
    pipeline: Pipeline, sides: dict[str, tuple[Any, dict[str, FieldRef]]], location: str
) -> tuple[Any, dict[str, FieldRef], Any]:
    """A single `mode: latest` join whose state streamsift keeps (transforms/join/
    latest_arrow.py): the streaming frame that brings both sides' records and dead letters
    together, shuffled by bucket; the joined rows' scope; and the join to run on each
    micro-batch of that frame. `location`: where the state lives (a directory or URL)."""
    from pyspark.sql import functions as F

    from streamsift.transforms.join.latest_arrow import EVENT_US, KIND, ArrowLatestJoin
    from streamsift.transforms.join.latest_buckets import BUCKET, KEY_TEXT
    from streamsift.transforms.join.latest_rule import Windows

    (join,) = pipeline.joins
    left_source, right_source = join.left.source or "", join.right.source or ""
    left_frame, left_scope = sides[left_source]
    right_frame, right_scope = sides[right_source]
    key_types = _key_types(join, left_scope, right_scope)
    left = _prepared(join, left_frame, left_scope, "left", key_types, False)
    right = _prepared(join, right_frame, right_scope, "right", key_types, False)

    fields: list[tuple[str, str, str]] = []
    typed: list[tuple[str, str, str, str]] = []  # input column, source column, side, type
    scope: dict[str, FieldRef] = {}
    for i, out in enumerate(join.output):
        ref = (left_scope if out.from_ == "left" else right_scope)[out.field]
        fields.append((f"_f{i}", out.column, out.from_))
        typed.append((f"_f{i}", ref.column, out.from_, SPARK_SQL_TYPES[ref.type]))
        scope[out.name] = FieldRef(out.name, out.column, ref.type)

    def shaped(frame: Any, side: str) -> Any:
        kind = F.when(F.col(JOIN_SPLIT), F.lit(side[0].upper())).otherwise(F.lit("D"))
        columns = [
            kind.alias(KIND),
            F.unix_micros("_event_time").alias(EVENT_US),
            F.col(KEY_TEXT),
            F.col(BUCKET),
        ]
        for name, column, from_, sql_type in typed:
            value = F.col(column) if from_ == side else F.lit(None).cast(sql_type)
            columns.append(value.alias(name))
        for meta in OUTPUT_COLUMNS:
            if meta.name in frame.columns:
                columns.append(F.col(meta.name))
            else:  # the matched right record's position: a source's row has none
                columns.append(F.lit(NO_RECORD).cast(meta.sql_type).alias(meta.name))
        return frame.select(*columns)

    # Spark runs a micro-batch without data, when the watermark moves, only for a query with
    # a stateful operator: this one never receives a row (the same trick as the split). It
    # comes first in the union: the left side's shuffle is planned once, where it comes
    # first, and Spark finds the operator's watermark only below a shuffle it planned, not
    # below one it reuses.
    never = left.filter(F.expr("spark_partition_id() < 0")).dropDuplicatesWithinWatermark([BUCKET])
    frame = shaped(never, "left").unionByName(shaped(left, "left"))
    frame = frame.unionByName(shaped(right, "right"))
    ddl = ", ".join(
        [f"`{out}` {t}" for (_, _, _, t), (_, out, _) in zip(typed, fields, strict=True)]
        + [f"`{m.name}` {m.sql_type}" for m in OUTPUT_COLUMNS]
    )
    windows = Windows(_micros(join.left_window), _micros(join.right_window))
    arrow_join = ArrowLatestJoin(
        location, windows, join.type is JoinType.LEFT, left_source, tuple(fields), ddl
    )
    return frame, scope, arrow_join
