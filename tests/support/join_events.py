"""The join tests' orders and users: orders (left, key `user_id`) join users (right, key
`user.id`); a right event at tr matches a left event at tl when tl - 30m <= tr <= tl + 1h
(right.time_window 30m, left 1h). The chain tests add products (key `id`), which the orders
name by `product_id`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from support.pipeline_docs import fields, join_doc, join_source, mapping

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
MS = timedelta(milliseconds=1)
H, M = timedelta(hours=1), timedelta(minutes=1)


def order(
    oid: str, user: str, at: datetime, amount: float = 1.0, product: str | None = None
) -> dict:
    doc = {"order_id": oid, "user_id": user, "amount": amount, "ts": at.isoformat()}
    if product is not None:
        doc["product_id"] = product
    return doc


def product(pid: str, title: str, at: datetime) -> dict:
    return {"id": pid, "title": title, "ts": at.isoformat()}


def user(uid: str, name: str, at: datetime) -> dict:
    return {"user": {"id": uid, "name": name}, "ts": at.isoformat()}


def orders_join_users_doc(broker, chdb_path, tmp_path, name: str, how: str, lateness: str) -> dict:
    """Orders join users as the module docstring says, both sides deduplicated; `how` the
    join's type, `lateness` its allowed lateness, into table `name`_`how`."""
    return join_doc(
        name=f"{name}-{how}".replace("_", "-")[:90],
        sources=[
            join_source(
                "orders",
                f"{name}_orders",
                fields(
                    ("order_id", "string"),
                    ("user_id", "string"),
                    ("amount", "float"),
                    ("ts", "timestamp"),
                ),
                event_time="ts",
                dedup={"key": "order_id", "time_window": "1h"},
                bootstrap_servers=broker.bootstrap_servers,
            ),
            join_source(
                "users",
                f"{name}_users",
                fields(("user.id", "string"), ("user.name", "string"), ("ts", "timestamp")),
                event_time="ts",
                dedup={"key": ["user.id", "user.name"], "time_window": "1h"},
                bootstrap_servers=broker.bootstrap_servers,
            ),
        ],
        join={
            "type": how,
            "left": {"source": "orders", "key": "user_id", "time_window": "1h"},
            "right": {"source": "users", "key": "user.id", "time_window": "30m"},
            "output": [
                {"from": "left", "field": "order_id"},
                {"from": "left", "field": "amount"},
                {"from": "right", "field": "user.name", "as": "name"},
                {"from": "left", "field": "ts", "as": "order_ts"},
            ],
            "allowed_lateness": lateness,
        },
        clickhouse={"path": str(chdb_path)},
        table=f"{name}_{how}",
        sink={"create_table": True},
        mapping=mapping(
            ("order_id", "order_id", "String"),
            ("amount", "amount", "Float64"),
            ("name", "name", "Nullable(String)"),
            ("order_ts", "order_ts", "DateTime64(3, 'UTC')"),
        ),
        checkpoint_dir=tmp_path / how,
    )


# The chain tests' sources: orders (with a product_id) join users, then products.
CHAIN_SCHEMAS = {
    "orders": fields(
        ("order_id", "string"),
        ("user_id", "string"),
        ("product_id", "string"),
        ("amount", "float"),
        ("ts", "timestamp"),
    ),
    "users": fields(("user.id", "string"), ("user.name", "string"), ("ts", "timestamp")),
    "products": fields(("id", "string"), ("title", "string"), ("ts", "timestamp")),
}
# Step 1 of a chain (add its mode): each order with its user's name, carrying product_id.
USERS_STEP = {
    "left": {"source": "orders", "key": "user_id", "time_window": "1h"},
    "right": {"source": "users", "key": "user.id", "time_window": "30m"},
    "output": [
        *({"from": "left", "field": f} for f in ("order_id", "product_id", "amount", "ts")),
        {"from": "right", "field": "user.name", "as": "name"},
    ],
}
# The output of a products step (step 2)
PRODUCTS_OUTPUT = [
    {"from": "left", "field": "order_id"},
    {"from": "left", "field": "name"},
    {"from": "right", "field": "title"},
    {"from": "left", "field": "amount"},
]
CHAIN_MAPPING = mapping(
    ("order_id", "order_id", "String"),
    ("name", "name", "Nullable(String)"),
    ("title", "title", "Nullable(String)"),
    ("amount", "amount", "Float64"),
)


def products_step(mode: str, how: str = "inner", **right: str) -> dict:
    """Step 2 of a chain: the previous rows (left window 20m) join products on product_id;
    `right` adds to the right side (e.g. time_window, for mode latest)."""
    return {
        "type": how,
        "mode": mode,
        "left": {"key": "product_id", "time_window": "20m"},
        "right": {"source": "products", "key": "id", **right},
        "output": PRODUCTS_OUTPUT,
    }


def chain_doc(
    name: str, steps: list[dict], bootstrap_servers: str, clickhouse: dict, checkpoint_dir
) -> dict:
    """Orders join users join products (`join` as the list `steps`), no dedup, into table
    `name` (mapped as CHAIN_MAPPING); each source's event time is its `ts`."""
    return join_doc(
        name=name.replace("_", "-")[:90],
        sources=[
            join_source(
                source,
                f"{name}_{source}",
                schema,
                event_time="ts",
                bootstrap_servers=bootstrap_servers,
            )
            for source, schema in CHAIN_SCHEMAS.items()
        ],
        join=steps,
        clickhouse=clickhouse,
        table=name,
        sink={"create_table": True},
        mapping=CHAIN_MAPPING,
        checkpoint_dir=checkpoint_dir,
    )


def orders_users_products_doc(broker, chdb_path, tmp_path, name: str, steps: list[dict]) -> dict:
    """`chain_doc` on the test broker and chdb, checkpointed under `tmp_path`."""
    return chain_doc(
        name, steps, broker.bootstrap_servers, {"path": str(chdb_path)}, tmp_path / name
    )


def encode(docs: list[dict], key: str) -> list[tuple[bytes, bytes]]:
    out = []
    for d in docs:
        k = d["user"]["id"] if key == "user" else d[key]
        out.append((k.encode(), json.dumps(d).encode()))
    return out


# A three-source document that validates (never run: its broker and ClickHouse are made up):
# orders join users (latest), then products as a table (left).
CHAIN: dict[str, Any] = chain_doc(
    "chain",
    [{"mode": "latest", **USERS_STEP}, products_step("table", "left")],
    "k:9092",
    {"path": "/tmp/x"},
    None,
)
