"""The vectorised ceiling (`raw_vec`) and streamsift's own stages without Spark (`nospark`).

`raw_naive` (baselines.py) parses each message with `json.loads` and inserts on the loop's
thread: not what a careful hand-written consumer does. These two are the honest references:

- `raw_vec`: `consume(num_messages=...)` with the fetch settings streamsift's source uses
  (sources/kafka_range.py FETCH_DEFAULTS), each poll's values joined and parsed at once by
  pyarrow's JSON reader with an explicit schema, first-wins dedup on the id column (`first_wins`:
  dictionary-encoded, with a set of the ids seen so far), and inserts of ~50k rows on a second
  thread while the next messages are fetched and parsed. Without dedup: its ingest variant.
- `nospark`: the same consumer, but each poll goes through streamsift's own processor (parse,
  event-time checks, the RocksDB dedup decision, the pass-through's shaping) and its
  BatchWriter (sort, chunks, insert tokens), in a plain loop: streamsift minus Spark, so
  streamsift's distance to it is what Spark costs.

Both insert into chdb in their own process, as the other baselines do, and are verified the
same way (common.verify, with the truth's sample of column values).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
from confluent_kafka import Consumer, KafkaError, TopicPartition

from streamsift.sources.kafka_range import FETCH_DEFAULTS
from streamsift_bench.baselines import INSERT_ROWS, Drained
from streamsift_bench.common import (
    ARROW_SCHEMA,
    ProgressLog,
    create_table_sql,
    dir_bytes,
    verify,
)

CONSUME_MESSAGES = 10_000  # messages asked of one consume() call
TABLE = "events"
_TS = pa.timestamp("us", tz="UTC")
# The load generator's events as pyarrow's JSON reader is told to read them (other keys ignored).
EVENT_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("type", pa.string()),
        ("user", pa.struct([("id", pa.string()), ("country", pa.string())])),
        (
            "session",
            pa.struct([("id", pa.string()), ("device", pa.struct([("os", pa.string())]))]),
        ),
        ("tags", pa.list_(pa.string())),
        ("amount", pa.float64()),
        ("attempt", pa.int64()),
        ("created_at", _TS),
        ("produced_at_ms", pa.int64()),
    ]
)


def parse_events(values: list[bytes]) -> pa.Table:
    """One poll's JSON values as the benchmark table's columns (common.ARROW_SCHEMA)."""
    nested = pajson.read_json(
        io.BytesIO(b"\n".join(values)),
        read_options=pajson.ReadOptions(use_threads=False, block_size=1 << 26),
        parse_options=pajson.ParseOptions(
            explicit_schema=EVENT_SCHEMA, unexpected_field_behavior="ignore"
        ),
    )
    if nested.num_rows != len(values):
        raise ValueError(f"parsed {nested.num_rows} rows of {len(values)} messages")
    user, session = nested.column("user"), nested.column("session")
    columns = [
        nested.column("event_id"),
        nested.column("type"),
        pc.struct_field(user, "id"),
        pc.struct_field(user, "country"),
        pc.struct_field(session, "id"),
        pc.struct_field(pc.struct_field(session, "device"), "os"),
        nested.column("tags"),
        nested.column("amount"),
        nested.column("attempt").cast(pa.uint32()),
        nested.column("created_at"),
        nested.column("produced_at_ms"),
    ]
    return pa.Table.from_arrays(columns, schema=ARROW_SCHEMA)


def first_wins(ids: pa.Array | pa.ChunkedArray, seen: set[str]) -> np.ndarray:
    """Which rows keep their id: the first occurrence of each id, across calls (`seen`, updated).

    Vectorised but for set operations in C: the ids are dictionary-encoded (codes in order of
    first appearance, so a row is its id's first when its code exceeds every code before it),
    the batch's distinct ids are checked against `seen` as a set intersection, and those
    already seen are looked up with `is_in` over that (small) intersection.
    """
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    n = len(ids)
    if n == 0:
        return np.zeros(0, dtype=bool)
    encoded = ids.dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    highest = np.maximum.accumulate(codes)
    first = np.empty(n, dtype=bool)
    first[0] = True
    first[1:] = highest[1:] > highest[:-1]
    distinct = encoded.dictionary.to_pylist()
    old = seen.intersection(distinct)
    seen.update(distinct)
    if not old:
        return first
    was_seen = pc.is_in(encoded.dictionary, value_set=pa.array(list(old), pa.string()))
    return first & ~was_seen.to_numpy(zero_copy_only=False)[codes]


def fetch_consumer(spec: dict[str, Any], topic: str) -> tuple[Consumer, list[int]]:
    """A consumer with the source's fetch settings, assigned every partition from offset 0."""
    consumer = Consumer(
        {
            **FETCH_DEFAULTS,
            "bootstrap.servers": spec["bootstrap_servers"],
            "group.id": f"bench-{spec['name']}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
        }
    )
    parts = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, 0) for p in parts])
    return consumer, parts


def poll(consumer: Consumer, want: int) -> list[Any]:
    """Up to `want` messages (fewer at the end), errors other than end-of-partition raised."""
    msgs = consumer.consume(num_messages=min(want, CONSUME_MESSAGES), timeout=1.0)
    out = []
    for msg in msgs:
        err = msg.error()
        if err is None:
            out.append(msg)
        elif err.code() != KafkaError._PARTITION_EOF:
            raise RuntimeError(f"consume failed: {err.str()}")
    return out


class Inserter:
    """Inserts on a thread of its own, one insert in flight: the next fetch overlaps it."""

    def __init__(self, insert: Callable[[pa.Table], None], done: Drained) -> None:
        self._insert = insert
        self._done = done
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-insert")
        self._inflight: Future[None] | None = None
        self.inserts = 0

    def submit(self, table: pa.Table) -> None:
        self.wait()
        self._inflight = self._pool.submit(self._run, table)
        self.inserts += 1

    def _run(self, table: pa.Table) -> None:
        self._insert(table)
        self._done.insert_finished()  # the first one ends the "first batch"

    def wait(self) -> None:
        if self._inflight is not None:
            self._inflight.result()  # an insert's failure ends the run
            self._inflight = None

    def close(self) -> None:
        self.wait()
        self._pool.shutdown()


def run_raw_vec(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """Drain the topic with the vectorised consumer (dedup unless spec['dedup'] is false)."""
    import time

    import clickhouse_connect

    work = Path(spec["work_dir"])
    dedup = bool(spec["dedup"])
    client = clickhouse_connect.get_client(dsn=f"chdb://{work / 'clickhouse'}")
    client.command(create_table_sql(TABLE))
    truth = spec["truth"]
    total = truth["produced"]
    consumer, _ = fetch_consumer(spec, spec["topic"])
    done = Drained()
    inserter = Inserter(lambda table: client.insert_arrow(TABLE, table), done)
    seen: set[str] = set()
    pending: list[pa.Table] = []
    pending_rows = 0

    def flush() -> None:
        nonlocal pending_rows
        if pending:
            inserter.submit(pa.concat_tables(pending))
            done.inserted += pending_rows
            pending.clear()
            pending_rows = 0

    try:
        while done.consumed < total:
            msgs = poll(consumer, total - done.consumed)
            if msgs:
                done.first_at = done.first_at or time.time()
                done.consumed += len(msgs)
                table = parse_events([m.value() for m in msgs])
                if dedup:
                    table = table.filter(pa.array(first_wins(table.column("event_id"), seen)))
                pending.append(table)
                pending_rows += table.num_rows
            if pending_rows >= INSERT_ROWS or done.consumed >= total:
                flush()
            progress.write(read=done.consumed, written=done.inserted)
        flush()
        inserter.close()
        done.inserts = inserter.inserts
        done.done_at = time.time()
    finally:
        consumer.close()
    progress.write(read=done.consumed, written=done.inserted)

    def query(sql: str) -> tuple:
        return client.query(sql).result_rows[0]

    def rows(sql: str) -> list[tuple]:
        return list(client.query(sql).result_rows)

    check = verify(query, TABLE, truth, dedup=dedup, rows=rows)
    return {
        "read": done.consumed,
        "written": done.inserted,
        "inserts": done.inserts,
        **done.timings(spec["process_started"]),
        "state_bytes": 0,
        "sink_bytes": dir_bytes(work / "clickhouse"),
        **check,
    }
