"""Hand-written baselines: what a plain Python consumer achieves on the same data and sink.

- `raw`: confluent-kafka consumer, `json.loads`, an in-memory set for first-wins dedup, Arrow
  inserts of ~50k rows into ClickHouse: the "raw ceiling" of this machine.
- `raw` without dedup: the same loop writing every message (the ingest ceiling).
- `ch_final`: every message into a ReplacingMergeTree (version = first attempt wins) and the
  dedup done by ClickHouse at read time with FINAL, whose read cost is measured too.

Each runs in its own worker process with its own chdb directory (one per process).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from streamsift.bench.common import (
    VERSION_COLUMN,
    ProgressLog,
    create_table_sql,
    dir_bytes,
    rows_to_arrow,
    timed_query,
    verify,
)

INSERT_ROWS = 50_000
READ_QUERY = "SELECT count(), uniqExact(user_id), round(sum(amount), 2) FROM {source}"


def run_raw(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """Consume the whole topic once, dedup (or not), insert in ~50k-row chunks, verify."""
    import clickhouse_connect

    started_wall = spec["process_started"]
    work = Path(spec["work_dir"])
    final = spec["kind"] == "ch_final"
    dedup = spec["dedup"] and not final
    table = "events"
    client = clickhouse_connect.get_client(dsn=f"chdb://{work / 'clickhouse'}")
    engine = f"ReplacingMergeTree({VERSION_COLUMN})" if final else "MergeTree"
    client.command(create_table_sql(table, engine=engine, version=final))

    truth = spec["truth"]
    total = truth["produced"]
    consumer = Consumer(
        {
            "bootstrap.servers": spec["bootstrap_servers"],
            "group.id": f"bench-{spec['name']}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 10,
            "auto.offset.reset": "earliest",
        }
    )
    md = consumer.list_topics(spec["topic"], timeout=10).topics[spec["topic"]]
    consumer.assign([TopicPartition(spec["topic"], p, 0) for p in sorted(md.partitions)])

    seen: set[str] = set()
    pending: list[dict] = []
    consumed = inserted = chunk = 0
    first_at: float | None = None
    insert_s = 0.0

    def flush() -> None:
        nonlocal inserted, chunk, insert_s, pending
        if not pending:
            return
        t0 = time.perf_counter()
        client.insert_arrow(table, rows_to_arrow(pending, version=final))
        insert_s += time.perf_counter() - t0
        inserted += len(pending)
        chunk += 1
        pending = []
        consumer.commit(asynchronous=True)  # after the insert: at-least-once

    try:
        while consumed < total:
            msgs = consumer.consume(10_000, 1.0)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consume failed: {err.str()}")
                consumed += 1
                event = json.loads(msg.value())
                if dedup:
                    eid = event["event_id"]
                    if eid in seen:
                        continue
                    seen.add(eid)
                pending.append(event)
            if msgs and first_at is None:
                first_at = time.time()
            if len(pending) >= INSERT_ROWS or consumed >= total:
                flush()
            progress.write(read=consumed, written=inserted)
        flush()
        done_at = time.time()
    finally:
        consumer.close()
    progress.write(read=consumed, written=inserted)

    def query(sql: str) -> tuple:
        return client.query(sql).result_rows[0]

    check = verify(query, table, truth, dedup=dedup or final, final=final)
    result: dict[str, Any] = {
        "read": consumed,
        "written": inserted,
        "inserts": chunk,
        "insert_seconds": round(insert_s, 3),
        "processing_seconds": round(done_at - (first_at or done_at), 3),
        "wall_seconds": round(done_at - started_wall, 3),
        "startup_seconds": round((first_at or done_at) - started_wall, 3),
        "processing_started_at": first_at,
        "done_at": done_at,
        "state_bytes": 0,
        "sink_bytes": dir_bytes(work / "clickhouse"),
        **check,
    }
    if final:
        result["read_cost"] = final_read_cost(client, table)
        # the FINAL check above is what a user of this design gets; count the stored rows too
        result["stored_rows"] = int(query(f"SELECT count() FROM {table}")[0])
    return result


def final_read_cost(client: Any, table: str) -> dict[str, Any]:
    """What reading through FINAL costs against reading an already deduplicated table."""

    def query(sql: str) -> tuple:
        return client.query(sql).result_rows[0]

    parts = int(query(f"SELECT count() FROM system.parts WHERE table = '{table}' AND active")[0])
    client.command(f"CREATE TABLE {table}_deduped AS {table} ENGINE = MergeTree ORDER BY event_id")
    client.command(f"INSERT INTO {table}_deduped SELECT * FROM {table} FINAL")
    final_s = timed_query(query, READ_QUERY.format(source=f"{table} FINAL"))
    plain_s = timed_query(query, READ_QUERY.format(source=f"{table}_deduped"))
    wrong = int(query(f"SELECT count() FROM {table}")[0])
    return {
        "query": READ_QUERY.format(source="t"),
        "final_seconds": round(final_s, 4),
        "deduped_table_seconds": round(plain_s, 4),
        "final_over_deduped": round(final_s / plain_s, 2) if plain_s else None,
        "active_parts": parts,
        "rows_without_final": wrong,
    }
