"""Hand-written baselines: what a plain Python consumer achieves on the same data and sink.

- `raw_naive` (alias `raw`): confluent-kafka consumer with librdkafka's fetch defaults,
  `json.loads` per message, an in-memory set for first-wins dedup, Arrow columns built from
  the dicts, inserts of ~50k rows on the loop's thread. A plain consumer, not a ceiling: the
  vectorised one is raw_vec.py.
- `raw_naive_ingest`: the same loop writing every message.
- `ch_final`: every message into a ReplacingMergeTree (version = first attempt wins) and the
  dedup done by ClickHouse at read time with FINAL, whose read cost is measured too.
- `raw_join`: the dedup-join scenario by hand: one consumer over both topics, first-wins
  dedup per side in a dict, an in-memory symmetric hash join on the user id with the same
  windows and watermark rule as streamsift's (state dropped once the watermark passed it),
  Arrow inserts of ~50k joined rows.

Each runs in its own worker process with its own chdb directory (one per process).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamsift_bench.common import (
    JOIN_MAPPING,
    JOIN_TABLE,
    VERSION_COLUMN,
    ProgressLog,
    arrow_schema,
    create_table_sql,
    dir_bytes,
    rows_to_arrow,
    timed_query,
    verify,
    verify_join,
)
from streamsift_bench.consume_loop import Batching, consumer_from_start, cut_list, drain

READ_QUERY = "SELECT count(), uniqExact(user_id), round(sum(amount), 2) FROM {source}"


def run_raw(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """Consume the whole topic once, dedup (or not), insert in ~50k-row chunks, verify."""
    import clickhouse_connect

    work = Path(spec["work_dir"])
    final = spec["kind"] == "ch_final"
    dedup = spec["dedup"] and not final
    table = "events"
    client = clickhouse_connect.get_client(dsn=f"chdb://{work / 'clickhouse'}")
    engine = f"ReplacingMergeTree({VERSION_COLUMN})" if final else "MergeTree"
    client.command(create_table_sql(table, engine=engine, version=final))
    truth = spec["truth"]
    consumer, _ = consumer_from_start(spec, [spec["topic"]])
    seen: set[str] = set()
    pending: list[dict] = []
    insert_s = 0.0

    def take(msgs: list[Any]) -> None:
        for msg in msgs:
            event = json.loads(msg.value())
            if dedup:
                eid = event["event_id"]
                if eid in seen:
                    continue
                seen.add(eid)
            pending.append(event)

    def write(events: list[dict]) -> int:
        nonlocal insert_s
        t0 = time.perf_counter()
        client.insert_arrow(table, rows_to_arrow(events, version=final))
        insert_s += time.perf_counter() - t0
        return len(events)

    batching = Batching(take, lambda: len(pending), lambda: cut_list(pending), write)
    done = drain(consumer, truth["produced"], progress, batching, commit=True)

    def query(sql: str) -> tuple:
        return client.query(sql).result_rows[0]

    def rows(sql: str) -> list[tuple]:
        return list(client.query(sql).result_rows)

    check = verify(query, table, truth, dedup=dedup or final, final=final, rows=rows)
    result: dict[str, Any] = {
        **done.result(spec["process_started"]),
        "insert_seconds": round(insert_s, 3),
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


# ---------------------------------------------------------------------- the join by hand

# the event times as their ISO text first, cast to timestamps per inserted table
_JOIN_ARROW = arrow_schema(JOIN_MAPPING, timestamps=pa.string())
_TS = pa.timestamp("us", tz="UTC")


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


def _window_ms(text: str) -> int:
    from streamsift.config.durations import parse_duration

    return int(parse_duration(text) / timedelta(milliseconds=1))


def run_raw_join(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    """Both topics through one consumer: dedup each side, join in memory, insert, verify."""
    import clickhouse_connect

    work = Path(spec["work_dir"])
    join = spec["join"]
    left_topic, right_topic = spec["topic"], join["topic"]
    wl, wr = _window_ms(join["left_window"]), _window_ms(join["right_window"])
    lateness = max(wl, wr)  # streamsift's default watermark delay
    dedup_window = _window_ms(spec.get("window", "1h"))
    client = clickhouse_connect.get_client(dsn=f"chdb://{work / 'clickhouse'}")
    cols = ", ".join(f"`{m['column']}` {m['type']}" for m in JOIN_MAPPING)
    client.command(
        f"CREATE TABLE IF NOT EXISTS {JOIN_TABLE} ({cols}) ENGINE = MergeTree "
        "ORDER BY (event_id, profile_event_id)"
    )
    truth = spec["truth"]
    consumer, assigned = consumer_from_start(spec, [left_topic, right_topic])
    # per side: dedup references (id -> event time) and join state (user -> [(time, event)])
    seen: tuple[dict[str, int], dict[str, int]] = ({}, {})
    state: tuple[dict[str, list], dict[str, list]] = ({}, {})
    # The watermark follows the slowest partition of either topic (one consumer fetches
    # partitions at uneven paces, unlike streamsift's source, which admits each partition
    # its share of a micro-batch), so no record is behind it unless its own partition is
    # out of order by more than the lateness.
    newest = dict.fromkeys(assigned, -(2**62))
    watermark = -(2**62)
    pending: list[tuple[dict, dict]] = []
    behind = 0

    def take_one(msg: Any) -> None:
        nonlocal behind
        side = 0 if msg.topic() == left_topic else 1
        event = json.loads(msg.value())
        t = _ms(event["created_at"] if side == 0 else event["updated_at"])
        ref = seen[side].get(event["event_id"])
        if ref is not None and abs(t - ref) < dedup_window:
            return
        seen[side][event["event_id"]] = t
        if t < watermark:
            behind += 1
            return
        where = (msg.topic(), msg.partition())
        newest[where] = max(newest[where], t)
        key = event["user"]["id"]
        for to, other in state[1 - side].get(key, ()):
            if side == 0 and t - wr <= to <= t + wl:
                pending.append((event, other))
            elif side == 1 and to - wr <= t <= to + wl:
                pending.append((other, event))
        state[side].setdefault(key, []).append((t, event))

    def take(msgs: list[Any]) -> None:
        for msg in msgs:
            take_one(msg)

    def advance_watermark() -> None:
        # the watermark moves between polls, like Spark's between micro-batches; what it has
        # passed can match nothing any more (as in Spark's join)
        nonlocal watermark
        watermark = max(watermark, min(newest.values()) - lateness)
        for side, window in ((0, wl), (1, wr)):
            for key in list(state[side]):
                kept = [(t, e) for t, e in state[side][key] if t + window >= watermark]
                if kept:
                    state[side][key] = kept
                else:
                    del state[side][key]

    def write(pairs: list[tuple[dict, dict]]) -> int:
        columns = list(zip(*(_joined_row(le, re_) for le, re_ in pairs), strict=True))
        table = pa.Table.from_arrays(
            [pa.array(c, f.type) for c, f in zip(columns, _JOIN_ARROW, strict=True)],
            schema=_JOIN_ARROW,
        )
        for name in ("created_at", "profile_updated_at"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, table.column(i).cast(_TS))
        client.insert_arrow(JOIN_TABLE, table)
        return len(pairs)

    batching = Batching(take, lambda: len(pending), lambda: cut_list(pending), write)
    total = truth["produced"] + truth["join"]["right_messages"]
    done = drain(consumer, total, progress, batching, commit=True, after_poll=advance_watermark)

    def query(sql: str) -> tuple:
        return client.query(sql).result_rows[0]

    check = verify_join(query, JOIN_TABLE, truth["join"])
    return {
        **done.result(spec["process_started"]),
        "events": truth["produced"],
        "left_events": truth["produced"],
        "right_events": truth["join"]["right_messages"],
        "late_dropped": behind,
        "state_bytes": 0,
        "sink_bytes": dir_bytes(work / "clickhouse"),
        **check,
        "exact": check["exact"] and behind == 0,
    }


def _joined_row(left: dict, right: dict) -> tuple:
    return (
        left["event_id"],
        left["user"]["id"],
        left["amount"],
        left["attempt"],
        left["created_at"],
        left["produced_at_ms"],
        right["event_id"],
        right["user"]["plan"],
        right["attempt"],
        right["updated_at"],
    )
