"""Table DDL: the tables the sink creates, and reading back the settings that matter."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Inserts between two checkpoints must stay inside the dedup window; 1000 covers a
# micro-batch of 1000 chunks, far above what one batch produces.
DEDUP_WINDOW = 1000


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def create_table_sql(
    database: str,
    table: str,
    columns: Sequence[tuple[str, str]],
    order_by: Sequence[str] = (),
    engine: str = "MergeTree",
) -> str:
    cols = ",\n  ".join(f"{quote(name)} {ctype}" for name, ctype in columns)
    order = "(" + ", ".join(quote(c) for c in order_by) + ")" if order_by else "tuple()"
    return (
        f"CREATE TABLE IF NOT EXISTS {quote(database)}.{quote(table)} (\n  {cols}\n) "
        f"ENGINE = {engine} ORDER BY {order} "
        f"SETTINGS non_replicated_deduplication_window = {DEDUP_WINDOW}"
    )


def dedup_window_of(engine: str, create_query: str) -> int | None:
    """How many recent insert tokens the table remembers; None means 'replicated: on'."""
    if engine.startswith("Replicated") or engine.startswith("Shared"):
        return None
    m = re.search(r"non_replicated_deduplication_window\s*=\s*(\d+)", create_query)
    return int(m.group(1)) if m else 0


def alter_dedup_window_sql(database: str, table: str) -> str:
    return (
        f"ALTER TABLE {quote(database)}.{quote(table)} "
        f"MODIFY SETTING non_replicated_deduplication_window = {DEDUP_WINDOW}"
    )
