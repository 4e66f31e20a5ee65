"""What every benchmark worker shares: the target table, row conversion, checks, progress.

Imported by the quixstreams worker too, which runs in its own interpreter (quixstreams pins
older confluent-kafka and pydantic than streamsift), so this module imports nothing of
streamsift's product code: only the generated streams' field table and checksums
(streamsift.sample_data.schema, standard library only), pyarrow and the standard library.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamsift.sample_data.schema import (
    ID_CHECKSUM_SQL,
    LOAD_MAPPING,
    PAIR_CHECKSUM_SQL,
    clickhouse_type,
)

# the bench's topics keep a week of data, whatever their size; set explicitly, as the bundled
# broker reports only configs set at creation and quixstreams reads these of its input topic
TOPIC_CONFIG = {"retention.ms": "604800000", "retention.bytes": "-1"}

# Every benchmark table has the mapped columns plus the time ClickHouse inserted the row:
# `_ingested_at - produced_at_ms` is the end-to-end latency of a row.
INGESTED_AT = "_ingested_at"
INGESTED_AT_DDL = f"{INGESTED_AT} DateTime64(3, 'UTC') DEFAULT now64(3)"
# The Arrow type a hand-written consumer builds for each ClickHouse type of the tables.
_ARROW_TYPES = {
    "String": pa.string(),
    "LowCardinality(String)": pa.string(),
    "Array(String)": pa.list_(pa.string()),
    "Float64": pa.float64(),
    "UInt32": pa.uint32(),
    "Int64": pa.int64(),
    "DateTime64(3, 'UTC')": pa.timestamp("us", tz="UTC"),
}


def arrow_schema(
    mapping: Sequence[dict[str, str]], timestamps: pa.DataType | None = None
) -> pa.Schema:
    """The Arrow schema of a mapping's columns (`timestamps`: another type for DateTime64)."""
    return pa.schema(
        [
            (
                m["column"],
                timestamps
                if timestamps and m["type"].startswith("DateTime64")
                else _ARROW_TYPES[m["type"]],
            )
            for m in mapping
        ]
    )


ARROW_SCHEMA = arrow_schema(LOAD_MAPPING)
# A ramp step is sustained when the lag (produced - processed, as the pipeline reports its
# finished micro-batches about once a second) stays under LAG_BOUND_S seconds of input in the step's second half, grows by
# less than LAG_GROWTH_S seconds of input from the step's 2nd to its 4th quarter, and is gone
# DRAIN_GRACE_S after the step. The bound leaves room for a 1 s trigger, a batch of a second
# or two and the 1 s reporting interval; growth is what tells an overloaded pipeline apart.
LAG_BOUND_S = 5.0
LAG_GROWTH_S = 1.0
DRAIN_GRACE_S = 10.0
VERSION_COLUMN = "_version"  # ReplacingMergeTree keeps the highest: 2**32-1 - attempt

# The dedup-join scenario's table: the event's columns, then the matched profile event's.
JOIN_TABLE = "joined"
# Its pipeline's output, as `join.output` entries (side, field, name); each name is a column.
JOIN_OUTPUT = [
    ("left", "event_id", "event_id"),
    ("left", "user.id", "user_id"),
    ("left", "amount", "amount"),
    ("left", "attempt", "attempt"),
    ("left", "created_at", "created_at"),
    ("left", "produced_at_ms", "produced_at_ms"),
    ("right", "event_id", "profile_event_id"),
    ("right", "user.plan", "plan"),
    ("right", "attempt", "profile_attempt"),
    ("right", "updated_at", "profile_updated_at"),
]
JOIN_MAPPING = [
    {"field": name, "column": name, "type": clickhouse_type(field)}
    for _side, field, name in JOIN_OUTPUT
]


def create_table_sql(table: str, engine: str = "MergeTree", version: bool = False) -> str:
    """The benchmark table: mapped columns, `_ingested_at`, insert tokens remembered."""
    cols = [f"`{m['column']}` {m['type']}" for m in LOAD_MAPPING]
    if version:
        cols.append(f"{VERSION_COLUMN} UInt32")
    cols.append(INGESTED_AT_DDL)
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(cols)}) ENGINE = {engine} "
        "ORDER BY event_id SETTINGS non_replicated_deduplication_window = 1000"
    )


def rows_to_arrow(events: Sequence[dict], version: bool = False) -> pa.Table:
    """Parsed events (json.loads output) to the table's columns, as a hand-written consumer would."""
    created = pa.array([e["created_at"] for e in events], pa.string())
    columns = [
        pa.array([e["event_id"] for e in events], pa.string()),
        pa.array([e["type"] for e in events], pa.string()),
        pa.array([e["user"]["id"] for e in events], pa.string()),
        pa.array([e["user"]["country"] for e in events], pa.string()),
        pa.array([e["session"]["id"] for e in events], pa.string()),
        pa.array([e["session"]["device"]["os"] for e in events], pa.string()),
        pa.array([e["tags"] for e in events], pa.list_(pa.string())),
        pa.array([e["amount"] for e in events], pa.float64()),
        pa.array([e["attempt"] for e in events], pa.uint32()),
        created.cast(pa.timestamp("us", tz="UTC")),
        pa.array([e["produced_at_ms"] for e in events], pa.int64()),
    ]
    table = pa.Table.from_arrays(columns, schema=ARROW_SCHEMA)
    if version:
        versions = pa.array([0xFFFFFFFF - e["attempt"] for e in events], pa.uint32())
        table = table.append_column(VERSION_COLUMN, versions)
    return table


def verify(
    query: Any,
    table: str,
    truth: dict[str, Any],
    dedup: bool,
    final: bool = False,
    rows: Callable[[str], list[tuple]] | None = None,
) -> dict:
    """Compare a table with the generator's truth: exact or not, and every count behind it.

    `query(sql)` returns the first row of a result. With dedup every id must appear once
    in its first version (attempt 0) and the ids' checksum must match; without dedup every
    produced message must be a row. Given `rows(sql)` (all rows of a result) and a truth with
    a `sample`, the sampled events' column values are compared too (`check_sample`).
    """
    source = f"{table} FINAL" if final else table
    count, distinct, later = (
        int(v)
        for v in query(f"SELECT count(), uniqExact(event_id), countIf(attempt > 0) FROM {source}")
    )
    checksum = int(
        query(f"SELECT {ID_CHECKSUM_SQL} FROM (SELECT DISTINCT event_id FROM {source})")[0]
    )
    if dedup:
        expected = truth["expected_unique"]
        exact = (
            count == expected
            and distinct == expected
            and later == 0
            and checksum == truth["id_checksum"]
        )
    else:
        expected = truth["produced"]
        exact = (
            count == expected
            and distinct == truth["expected_unique"]
            and checksum == truth["id_checksum"]
        )
    out = {
        "expected_rows": expected,
        "rows": count,
        "distinct_ids": distinct,
        "later_versions": later,
        "id_checksum_ok": checksum == truth["id_checksum"],
        "exact": exact,
    }
    if rows is not None and truth.get("sample"):
        values = check_sample(rows, source, truth["sample"])
        out["values"] = values
        out["exact"] = exact and values["ok"]
    return out


# The sampled events' columns, as the truth holds them and as the table is read back.
SAMPLE_COLUMNS = ("event_id", "amount", "user_id", "country", "session_id", "os", "created_ms")


def check_sample(rows: Callable[[str], list[tuple]], source: str, sample: list[dict]) -> dict:
    """The sampled events' rows against their truth: every row of a sampled id must hold the
    event's values (amount, user, session, device, event time to the millisecond; a re-send
    carries the same), and each id must have exactly one row of its first version."""
    want = {e["event_id"]: e for e in sample}
    ids = ", ".join(f"'{i}'" for i in sorted(want))
    got = rows(
        "SELECT event_id, amount, user_id, country, session_id, os, "
        f"toUnixTimestamp64Milli(created_at), attempt FROM {source} WHERE event_id IN ({ids})"
    )
    firsts: dict[str, int] = dict.fromkeys(want, 0)
    wrong: list[str] = []
    for row in got:
        event = want[row[0]]
        firsts[row[0]] += int(row[-1]) == 0
        for name, value in zip(SAMPLE_COLUMNS[1:], row[1:-1], strict=True):
            expected = event[name]
            same = (
                abs(float(value) - expected) < 1e-9
                if isinstance(expected, float)
                else value == expected
            )
            if not same:
                wrong.append(f"{row[0]} {name}: {value!r} != {expected!r}")
    missing = sorted(i for i, n in firsts.items() if n != 1)
    return {
        "sampled": len(want),
        "rows_checked": len(got),
        "wrong_values": wrong[:10],
        "ids_without_one_first_version": missing[:10],
        "ok": not wrong and not missing,
    }


def sample_record(event: dict) -> dict:
    """What the truth keeps of a sampled event (SAMPLE_COLUMNS)."""
    from datetime import datetime

    return {
        "event_id": event["event_id"],
        "amount": float(event["amount"]),
        "user_id": event["user"]["id"],
        "country": event["user"]["country"],
        "session_id": event["session"]["id"],
        "os": event["session"]["device"]["os"],
        "created_ms": round(datetime.fromisoformat(event["created_at"]).timestamp() * 1000),
    }


def verify_join(query: Any, table: str, truth: dict[str, int], mode: str = "interval") -> dict:
    """Compare a joined table with the generator's join truth: exact or not, and why.

    Exact: as many rows as the reference's pairs, as many distinct (event id, profile event
    id) pairs, the same pair checksum, and no row made from a re-send on either side
    (attempt > 0: dedup must keep the first version). With `mode` latest: one row per left
    event that has a partner in the windows (which partner depends on what had arrived when
    the event was joined, so no pair checksum), and no re-sends.
    """
    if mode == "latest":
        return _verify_latest_join(query, table, truth)
    rows, distinct, later_left, later_right = (
        int(v)
        for v in query(
            "SELECT count(), uniqExact(event_id, profile_event_id), countIf(attempt > 0), "
            f"countIf(profile_attempt > 0) FROM {table}"
        )
    )
    pair_sql = PAIR_CHECKSUM_SQL.format(left="event_id", right="profile_event_id")
    checksum = int(query(f"SELECT {pair_sql} FROM {table}")[0])
    checksum_ok = checksum == truth["pair_checksum"]
    return {
        "expected_rows": truth["expected_rows"],
        "rows": rows,
        "distinct_pairs": distinct,
        "expected_distinct_pairs": truth["distinct_pairs"],
        "later_versions": later_left + later_right,
        "pair_checksum_ok": checksum_ok,
        "exact": (
            rows == truth["expected_rows"]
            and distinct == truth["distinct_pairs"]
            and later_left == later_right == 0
            and checksum_ok
        ),
    }


def _verify_latest_join(query: Any, table: str, truth: dict[str, int]) -> dict:
    rows, events, later_left, later_right = (
        int(v)
        for v in query(
            "SELECT count(), uniqExact(event_id), countIf(attempt > 0), "
            f"countIf(profile_attempt > 0) FROM {table}"
        )
    )
    return {
        "expected_rows": truth["left_matched"],
        "rows": rows,
        "distinct_events": events,
        "later_versions": later_left + later_right,
        "exact": rows == events == truth["left_matched"] and later_left == later_right == 0,
    }


def timed_query(query: Any, sql: str, repeat: int = 5) -> float:
    """Median wall seconds of `repeat` runs of a query (the first run warms caches, kept)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        query(sql)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


class ProgressLog:
    """Appends one JSON line per sample; the bench runner tails the file while a worker runs."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self._file = open(path, "a", buffering=1) if path else None  # noqa: SIM115 (long-lived)

    def write(self, **sample: Any) -> None:
        if self._file is not None:
            self._file.write(json.dumps({"t": time.time(), **sample}) + "\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_progress(path: Path) -> list[dict]:
    """All complete lines of a progress file (a line being written is skipped)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def dir_bytes(path: Path) -> int:
    """Bytes of the files under `path` (0 when it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def write_json(path: str | os.PathLike[str], doc: dict) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(path)


# Names of runs in the report and the plots.
LABELS = {
    "ingest": "streamsift ingest (parse + insert)",
    "dedup": "streamsift dedup (1h window)",
    "dedup-join": "streamsift dedup both sides + inner join (per left event)",
    "raw_naive": "naive raw consumer (json.loads + set dedup, inserts inline)",
    "raw_naive_ingest": "naive raw consumer, no dedup",
    "raw_vec": "vectorised raw consumer (pyarrow JSON, Arrow dedup, inserts overlapped)",
    "raw_vec_ingest": "vectorised raw consumer, no dedup",
    "raw_vec_server": "vectorised raw consumer into the ClickHouse endpoint (HTTP, server mode)",
    "nospark": "streamsift's stages without Spark (parse + RocksDB dedup + batch writer)",
    "nospark_ingest": "streamsift's stages without Spark, no dedup",
    "quix": "quixstreams (RocksDB dedup, batching sink)",
    "ch_final": "ClickHouse-side dedup (ReplacingMergeTree)",
    "raw_join": "raw consumer, dedup + in-memory join (per left event)",
    "dedup-large": "large drain: streamsift dedup (1h window)",
    "raw_naive-large": "large drain: naive raw consumer (json.loads + set dedup)",
    "raw_vec-large": "large drain: vectorised raw consumer",
    "nospark-large": "large drain: streamsift's stages without Spark",
    "quix-large": "large drain: quixstreams (RocksDB dedup, batching sink)",
}


def interpolate(series: Sequence[tuple[float, int]], t: float) -> float:
    """Value of a non-decreasing step series at time t (linear between samples)."""
    if not series or t <= series[0][0]:
        return series[0][1] if series and t >= series[0][0] else 0.0
    for (t0, v0), (t1, v1) in zip(series, series[1:], strict=False):
        if t0 <= t <= t1:
            return v0 + (v1 - v0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return float(series[-1][1])


def run_worker(argv: list[str] | None, run: Callable[[dict, ProgressLog], dict]) -> int:
    """A benchmark worker's frame: read the spec (argv[0]), run, write the result JSON.

    A failure is reported in the result (the runner marks the run failed), never raised.
    """
    import psutil

    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(argv[0]).read_text())
    spec["process_started"] = psutil.Process().create_time()
    progress = ProgressLog(spec.get("progress_path"))
    try:
        result = run(spec, progress)
        result["ok"] = True
    except Exception as exc:  # noqa: BLE001 (reported to the runner, which marks the run failed)
        traceback.print_exc()
        result = {"ok": False, "exact": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        progress.close()
    write_json(spec["result_path"], result)
    return 0 if result["ok"] else 1
