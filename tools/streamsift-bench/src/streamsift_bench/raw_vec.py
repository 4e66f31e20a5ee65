"""The vectorised ceiling (`raw_vec`) and streamsift's own stages without Spark (`nospark`).

`raw_naive` (baselines.py) parses each message with `json.loads` and inserts on the loop's
thread: not what a careful hand-written consumer does. These two are the honest references:

- `raw_vec`: `consume(num_messages=...)` with the fetch settings streamsift's source uses
  (sources/kafka_range.py FETCH_DEFAULTS), each poll's values joined and parsed at once by
  pyarrow's JSON reader with an explicit schema, first-wins dedup on the id column (`first_wins`:
  dictionary-encoded, with a set of the ids seen so far), and inserts of ~50k rows on a second
  thread while the next messages are fetched and parsed. Without dedup: its ingest variant.
  It inserts with streamsift's own ClickHouse client (sinks/clickhouse ClickHouseWriter: one
  block per insert, an insert token, the sink's retries), into chdb in its own process or,
  as `raw_vec_server`, over HTTP into the chdb-backed endpoint the run starts as a separate
  process, the one streamsift's server mode writes to (run_setup.clickhouse_endpoint):
  raw_vec_server / raw_vec is what the endpoint costs, streamsift-server / raw_vec_server
  what streamsift's server mode costs beyond it.
- `nospark`: the same consumer, but each poll goes through streamsift's own processor (parse,
  event-time checks, the RocksDB dedup decision, the pass-through's shaping) and its
  BatchWriter (sort, chunks, insert tokens), in a plain loop: streamsift minus Spark, so
  streamsift's distance to it is what Spark costs.

Both share the consume loop of the other hand-written runs (consume_loop.py) and are
verified the same way (common.verify, with the truth's sample of column values).
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
from confluent_kafka import Consumer

from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sources.kafka_range import FETCH_DEFAULTS
from streamsift_bench.common import (
    ARROW_SCHEMA,
    ProgressLog,
    create_table_sql,
    dir_bytes,
    verify,
)
from streamsift_bench.consume_loop import Batching, consumer_from_start, cut_list, drain

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


def fetch_consumer(spec: dict[str, Any], topic: str) -> Consumer:
    """A consumer with the source's fetch settings, assigned every partition from offset 0."""
    return consumer_from_start(spec, [topic], FETCH_DEFAULTS)[0]


def sink_writer(spec: dict[str, Any], port: int | None) -> ClickHouseWriter:
    """streamsift's ClickHouse client (the sink's, tokens and retries included) on the run's
    chdb directory, or on the endpoint at `port` over HTTP."""
    from streamsift.config.models import ClickHouseConnection

    if port is None:
        conn = ClickHouseConnection(path=Path(spec["work_dir"]) / "clickhouse")
    else:
        conn = ClickHouseConnection(host="127.0.0.1", port=port)
    return ClickHouseWriter(conn)


def run_raw_vec(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """Drain the topic with the vectorised consumer (dedup unless spec['dedup'] is false),
    into embedded chdb or, with spec['clickhouse'] "server", into the endpoint it starts."""
    from streamsift_bench.run_setup import clickhouse_endpoint

    with clickhouse_endpoint(spec) as port:
        return _run_raw_vec(spec, progress, sink_writer(spec, port))


def _run_raw_vec(
    spec: dict[str, Any], progress: ProgressLog, writer: ClickHouseWriter
) -> dict[str, Any]:
    work = Path(spec["work_dir"])
    dedup = bool(spec["dedup"])
    writer.command(create_table_sql(TABLE))
    truth = spec["truth"]
    seen: set[str] = set()
    pending: list[pa.Table] = []

    def take(msgs: list[Any]) -> None:
        table = parse_events([m.value() for m in msgs])
        if dedup:
            table = table.filter(pa.array(first_wins(table.column("event_id"), seen)))
        pending.append(table)

    def cut() -> pa.Table | None:
        tables = cut_list(pending)
        return None if tables is None else pa.concat_tables(tables)

    def write(table: pa.Table) -> int:
        writer.insert(TABLE, table, f"{spec['name']}:{next(tokens)}")  # as the sink inserts
        return table.num_rows

    tokens = itertools.count()
    consumer = fetch_consumer(spec, spec["topic"])
    batching = Batching(take, lambda: sum(t.num_rows for t in pending), cut, write)
    done = drain(consumer, truth["produced"], progress, batching, overlap=True)

    def query(sql: str) -> tuple:
        return writer.query_rows(sql)[0]

    check = verify(query, TABLE, truth, dedup=dedup, rows=writer.query_rows)
    return {
        **done.result(spec["process_started"]),
        "clickhouse": "server" if spec.get("clickhouse") == "server" else "embedded",
        "state_bytes": 0,
        "sink_bytes": dir_bytes(work / "clickhouse"),
        **check,
    }
