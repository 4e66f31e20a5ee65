"""The orders ⋈ user profiles join used by `streamsift demo --join` and the kill -9 harness.

Pure parts only (no Spark, no broker): the pipeline document (dedup on each side, then an
inner or left-outer temporal join of orders with user profile events on the user id), the
malformed messages each side's parser must send to the DLQ, the produce order that keeps
both topics in step in event time, and an independent reference that computes from the
generated messages alone the rows a correct pipeline writes. The streams themselves come
from `streamsift.sample_data.generator.generate_join_streams`; the dedup and the join of the
reference are those of `streamsift.sample_data.reference`.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from streamsift.config import format_duration, parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.sample_data.reference import dedup_first, interval_join
from streamsift.sample_data.schema import ORDER_FIELDS, USER_FIELDS, sink_mapping

ORDERS_TOPIC, USERS_TOPIC = "orders", "users"
TABLE = "orders_enriched"
LEFT_WINDOW = timedelta(minutes=5)  # an order waits 5 min for a later profile event
RIGHT_WINDOW = timedelta(hours=1)  # a profile event waits 1 h for later orders
LATENESS = max(LEFT_WINDOW, RIGHT_WINDOW)  # join.allowed_lateness left at its default
DEDUP_WINDOW = timedelta(hours=1)

# Messages each side's parser must send to the DLQ: (Kafka key, value).
BAD_ORDERS = [
    (b"bad-order-1", b"{not json"),  # malformed_json
    (b"bad-order-2", json.dumps({"order_id": "bad-order-2", "user_id": "u0"}).encode()),  # no time
]
BAD_USERS = [
    (b"bad-user-1", b"[1, 2]"),  # not_an_object
    (
        b"bad-user-2",
        json.dumps(
            {
                "event_id": "bad-user-2",
                "user": {"id": "u0", "name": 42, "plan": "free"},  # type_mismatch: a number
                "updated_at": "2026-01-01T00:00:00+00:00",
            }
        ).encode(),
    ),
]

# A joined row as compared: order id, profile event id, amount, user name, plan.
Row = tuple[str, str | None, float, str | None, str | None]
ROW_COLUMNS = "order_id, user_event_id, amount, user_name, plan"


# ---------------------------------------------------------------------------- the pipeline


def join_pipeline_doc(
    bootstrap_servers: str,
    data_dir: Path,
    join_type: str,
    max_rows_per_batch: int | None = None,
    *,
    clickhouse: dict[str, Any] | None = None,
    checkpoint_dir: Path | None = None,
    name: str = "demo-join",
) -> dict[str, Any]:
    """The pipeline as a document: dedup on each side, then orders join user profiles on the
    user id. ClickHouse defaults to embedded chdb in `data_dir/clickhouse`, the checkpoint to
    `data_dir/checkpoints/<name>`."""

    def source(src: str, topic: str, fields: list[dict], time_field: str, key: str) -> dict:
        return {
            "name": src,
            "bootstrap_servers": bootstrap_servers,
            "topic": topic,
            "schema": {"fields": fields, "event_time": time_field},
            "dedup": {"key": key, "time_window": format_duration(DEDUP_WINDOW)},
        }

    right_fields = ("event_id", "user_event_id"), ("user.name", "user_name"), ("user.plan", "plan")
    left_window, right_window = format_duration(LEFT_WINDOW), format_duration(RIGHT_WINDOW)
    return {
        "name": name,
        "sources": [
            source("orders", ORDERS_TOPIC, ORDER_FIELDS, "created_at", "order_id"),
            source("users", USERS_TOPIC, USER_FIELDS, "updated_at", "event_id"),
        ],
        "join": {
            "type": join_type,
            "left": {"source": "orders", "key": "user_id", "time_window": left_window},
            "right": {"source": "users", "key": "user.id", "time_window": right_window},
            "output": [
                *({"from": "left", "field": f} for f in ("order_id", "user_id", "amount")),
                {"from": "left", "field": "created_at"},
                *({"from": "right", "field": f, "as": a} for f, a in right_fields),
            ],
        },
        "sink": {
            "clickhouse": clickhouse or {"path": str(data_dir / "clickhouse")},
            "table": TABLE,
            "create_table": True,
            "order_by": ["order_id"],
            "mapping": [
                *sink_mapping(("order_id", "user_id", "amount", "created_at")),
                *(
                    {"field": a, "column": a, "type": "Nullable(String)"}
                    for a in ("user_event_id", "user_name", "plan")
                ),
            ],
        },
        "runtime": {
            "checkpoint_dir": str(checkpoint_dir or data_dir / "checkpoints" / name),
            "max_rows_per_batch": max_rows_per_batch,
        },
    }


def join_pipeline(
    bootstrap_servers: str, data_dir: Path, join_type: str, max_rows_per_batch: int | None = None
) -> Pipeline:
    """The demo's pipeline (see `join_pipeline_doc`), validated."""
    return parse_pipeline(
        join_pipeline_doc(bootstrap_servers, data_dir, join_type, max_rows_per_batch)
    )


# ---------------------------------------------------------------------------- produce order


def in_step(orders: list[dict], users: list[dict]) -> list[tuple[str, dict]]:
    """Both streams as one produce order of (topic, event), in step in event time.

    Each stream keeps its own order (re-sends stay where the generator put them, a few
    messages after their original); the two are merged on each stream's newest event time so
    far. Produced in this order, neither topic runs ahead of the other in event time by more
    than a produce slice, so a join watermark derived from either side never passes events
    the other side has still to deliver.
    """

    def clocked(side: int, events: list[dict], at: str) -> Iterable[tuple[datetime, int, dict]]:
        newest: datetime | None = None
        for event in events:
            t = _time(event[at])
            newest = t if newest is None or t > newest else newest
            yield newest, side, event

    merged = heapq.merge(
        clocked(0, users, "updated_at"),
        clocked(1, orders, "created_at"),
        key=lambda item: (item[0], item[1]),
    )
    return [(USERS_TOPIC if side == 0 else ORDERS_TOPIC, event) for _, side, event in merged]


# ---------------------------------------------------------------------------- the reference


@dataclass
class Expected:
    """What a correct pipeline writes for the generated streams (see `reference_rows`)."""

    rows: Counter[Row] = field(default_factory=Counter)
    order_duplicates: int = 0
    user_duplicates: int = 0
    unmatched_orders: int = 0  # orders (after dedup) with no profile event in their window
    null_rows: int = 0  # left outer: rows with NULL user fields, written by the end of the run
    pending: int = 0  # left outer: unmatched orders whose window the watermark has not passed


_MICROSECOND = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _us(text: str) -> int:
    """An event time as microseconds since the epoch (exact: datetimes have µs precision)."""
    return (_time(text) - _EPOCH) // _MICROSECOND


def reference_rows(orders: list[dict], users: list[dict], join_type: str) -> Expected:
    """The joined rows, from the well-formed generated messages, by the rules in
    docs/semantics.md: a profile event at tr matches an order at tl with the same user id when
    tl - 1h <= tr <= tl + 5m; inner gives one row per pair; left outer also gives one row with
    NULL user fields per order without a match, once the watermark (the older of the two
    sides' newest event time, minus the allowed lateness) has passed tl + 5m.

    Each side is deduplicated on its message key within `DEDUP_WINDOW` first; no record is
    late (the producers keep every record well inside the windows)."""
    left, order_dups = dedup_first(
        [(o["order_id"], o["user_id"], _us(o["created_at"]), o) for o in orders],
        DEDUP_WINDOW // _MICROSECOND,
    )
    right, user_dups = dedup_first(
        [(u["event_id"], u["user"]["id"], _us(u["updated_at"]), u) for u in users],
        DEDUP_WINDOW // _MICROSECOND,
    )
    expected = Expected(order_duplicates=order_dups, user_duplicates=user_dups)
    newest_left, newest_right = max(r[2] for r in left), max(r[2] for r in right)
    watermark = min(newest_left, newest_right) - LATENESS // _MICROSECOND
    pairs = interval_join(left, right, LEFT_WINDOW // _MICROSECOND, RIGHT_WINDOW // _MICROSECOND)
    for (order_id, _user, tl, order), matches in pairs:
        for *_, user in matches:
            row = (
                order_id,
                user["event_id"],
                order["amount"],
                user["user"]["name"],
                user["user"]["plan"],
            )
            expected.rows[row] += 1
        if matches:
            continue
        expected.unmatched_orders += 1
        if join_type == "left":
            if tl + LEFT_WINDOW // _MICROSECOND < watermark:
                expected.rows[(order_id, None, order["amount"], None, None)] += 1
                expected.null_rows += 1
            else:
                expected.pending += 1
    return expected
