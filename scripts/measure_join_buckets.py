"""Measure `join.mode: latest`'s processor alone, grouped by key or by buckets of keys.

    .venv/bin/python scripts/measure_join_buckets.py keyed|bucketed|arrow KEYS dense|sparse

A parquet stream (one file per micro-batch) goes through the bare `transformWithState`
stage, as transforms/join/latest.py plans it, into a noop sink (local[2], RocksDB state,
two shuffle partitions). The first batch gives each of KEYS keys a right version; five more
follow, `dense`: 50,000 records (one in ten a right version) spread over all keys, `sparse`:
500. Prints Spark's `addBatch` seconds per batch as JSON. Run it on a quiet machine, the
layouts alternating (docs/benchmarks.md, "Keys in buckets").

`arrow` is a bound, not a join: the same rule on Arrow batches (`mapInArrow` after a shuffle
by bucket) with its state in a dict of the Python worker, neither kept nor replay-safe, no
watermark: what the rule costs without `transformWithState`'s per-record `Row`s and state
round trips, for weighing a join whose state streamsift keeps itself, as dedup's.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

S = 1_000_000  # a second in µs


def write_batches(data: Path, keys: int, dense: bool) -> None:
    offset, t = 0, 1_700_000_000 * S
    batches = [[("R", k, t, k) for k in range(keys)]]
    offset += keys
    for b in range(1, 6):
        n = 50_000 if dense else 500
        t += 5 * S
        batch = []
        for i in range(n):
            k = (i * 7919 + b * 104729) % keys
            batch.append(("R" if i % 10 == 0 else "L", k, t + i, offset + i))
        offset += n
        batches.append(batch)
    for i, batch in enumerate(batches):
        table = pa.table(
            {
                "_jk0": [f"u{k}" for _, k, _, _ in batch],
                "_event_time": pa.array([et for *_, et, _ in batch], pa.timestamp("us", "UTC")),
                "side": [side for side, *_ in batch],
                "_partition": pa.array([0] * len(batch), pa.int32()),
                "_offset": pa.array([o for *_, o in batch], pa.int64()),
            }
        )
        pq.write_table(table, data / f"b{i:03d}.parquet")


def rule_on_arrow(rule: object, batches: object) -> object:
    """The `arrow` layout's function: each batch's records split by key, the rule run per key
    against a dict of the worker's (a bound on the cost, not a join: see the docstring)."""
    from streamsift.transforms.join.latest_buckets import records_by_key

    state: dict[str, tuple] = {}
    schema = pa.schema(
        [
            ("_lp", pa.string()),
            ("_rp", pa.string()),
            ("_rpartition", pa.int32()),
            ("_roffset", pa.int64()),
        ]
    )
    for batch in batches:  # type: ignore[attr-defined]
        out: list[tuple] = []
        for key_text, sides in records_by_key(batch.column(1).to_pylist()).items():
            rights, lefts = state.get(key_text, ((), ()))
            result = rule(rights, lefts, sides["R"], sides["T"], sides["L"], 0, key_text == "")  # type: ignore[operator]
            state[key_text] = (result.rights, result.lefts)
            out += [(lt.payload, rt.payload, rt.partition, rt.offset) for lt, rt in result.matched]
        columns = list(zip(*out, strict=True)) if out else [[], [], [], []]
        yield pa.RecordBatch.from_arrays(
            [pa.array(c, t.type) for c, t in zip(columns, schema, strict=True)], schema=schema
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("layout", choices=["keyed", "bucketed", "arrow"])
    parser.add_argument("keys", type=int)
    parser.add_argument("shape", choices=["dense", "sparse"])
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from streamsift.transforms.join.latest import (
        OUTPUT_SCHEMA,
        LatestJoinProcessor,
        LatestRule,
        joined_row,
    )
    from streamsift.transforms.join.latest_buckets import (
        BUCKET,
        KEY_TEXT,
        RECORD,
        BucketedJoinProcessor,
        with_bucket,
    )
    from streamsift.transforms.join.latest_rule import Windows

    base = Path(tempfile.mkdtemp(prefix="join-buckets-"))
    try:
        data = base / "data"
        data.mkdir()
        write_batches(data, args.keys, args.shape == "dense")
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.sql.shuffle.partitions", "2")
            .config(
                "spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            )
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        schema = "_jk0 STRING, _event_time TIMESTAMP, side STRING, _partition INT, _offset BIGINT"
        frame = (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(data))
            .withWatermark("_event_time", "60 seconds")
        )
        payload = F.to_json(F.struct(F.col("_offset").alias("o")))
        micros = F.unix_micros("_event_time")
        rule = LatestRule(Windows(30 * S, 600 * S))
        if args.layout == "arrow":
            frame = with_bucket(frame, ["_jk0"])
            key_and_payload = F.concat(F.col(KEY_TEXT), payload)
            record = F.concat_ws(
                "|", "side", micros, "_partition", "_offset", F.length(KEY_TEXT), key_and_payload
            )
            shuffled = frame.select(BUCKET, record.alias(RECORD)).repartition(F.col(BUCKET))
            rows = shuffled.mapInArrow(functools.partial(rule_on_arrow, rule), OUTPUT_SCHEMA)
        elif args.layout == "keyed":
            record = F.concat_ws("|", "side", micros, "_partition", "_offset", payload)
            grouped = frame.select("_jk0", "_event_time", record.alias(RECORD)).groupBy("_jk0")
            processor: object = LatestJoinProcessor(rule, False)
        else:
            frame = with_bucket(frame, ["_jk0"])
            key_and_payload = F.concat(F.col(KEY_TEXT), payload)
            record = F.concat_ws(
                "|", "side", micros, "_partition", "_offset", F.length(KEY_TEXT), key_and_payload
            )
            grouped = frame.select(BUCKET, "_event_time", record.alias(RECORD)).groupBy(BUCKET)
            processor = BucketedJoinProcessor(
                rule, False, functools.partial(joined_row, False, None)
            )
        if args.layout != "arrow":
            rows = grouped.transformWithState(processor, OUTPUT_SCHEMA, "Append", "EventTime")
        query = (
            rows.writeStream.format("noop")
            .option("checkpointLocation", str(base / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        seconds = [
            p["durationMs"].get("addBatch", 0) / 1000
            for p in query.recentProgress
            if p["numInputRows"] > 0
        ]
        print(
            json.dumps(
                {
                    "layout": args.layout,
                    "keys": args.keys,
                    "shape": args.shape,
                    "addBatch_s": seconds,
                    "later_sum": round(sum(seconds[1:]), 2),
                }
            )
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
