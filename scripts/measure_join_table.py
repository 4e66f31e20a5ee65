"""Measure `join.mode: table` at scale: the state of a table of N keys (default 1,000,000)
and the time a restarted pipeline takes to its first joined row.

    .venv/bin/python scripts/measure_join_table.py [--keys 1000000] [--json out.json]

All on this machine: the bundled Kafka broker, an embedded (chdb) ClickHouse. It writes N
users (one value per key, `{"user": {"id", "name"}, "ts"}`) into a 2-partition topic, runs
the pipeline orders ⋈ users (mode table) until caught up in a process of its own (the table
is built: one state entry per key), and records the wall time and the size on disk of the
checkpoint's state store (`<checkpoint>/state`, RocksDB files and changelogs). Then a second
process starts the same pipeline after one order was written, and records from its start,
and from the run's start (the SparkSession already up), to the first joined row in the
table: the state is restored from the checkpoint, not rebuilt. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def pipeline_doc(bootstrap: str, work: Path) -> dict[str, Any]:
    def source(name: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
        return {
            "name": name,
            "bootstrap_servers": bootstrap,
            "topic": f"table_{name}",
            "schema": {
                "fields": [{"name": n, "type": t} for n, t in fields],
                "event_time": "ts",
            },
        }

    return {
        "name": "table-measure",
        "sources": [
            source("orders", [("order_id", "string"), ("user_id", "string"), ("ts", "timestamp")]),
            source("users", [("user.id", "string"), ("user.name", "string"), ("ts", "timestamp")]),
        ],
        "join": {
            "type": "inner",
            "mode": "table",
            "left": {"source": "orders", "key": "user_id", "time_window": "1h"},
            "right": {"source": "users", "key": "user.id"},
            "output": [
                {"from": "left", "field": "order_id"},
                {"from": "right", "field": "user.name", "as": "name"},
            ],
        },
        "sink": {
            "clickhouse": {"path": str(work / "clickhouse")},
            "table": "table_measure",
            "create_table": True,
            "mapping": [
                {"field": "order_id", "column": "order_id", "type": "String"},
                {"field": "name", "column": "name", "type": "Nullable(String)"},
            ],
        },
        "runtime": {"checkpoint_dir": str(work / "checkpoint")},
    }


def produce_users(bootstrap: str, keys: int) -> float:
    from confluent_kafka import Producer

    started = time.monotonic()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    for i in range(keys):
        ts = (T0 + timedelta(milliseconds=i)).isoformat()
        value = json.dumps({"user": {"id": f"u{i}", "name": f"name-{i}"}, "ts": ts})
        while True:
            try:
                producer.produce("table_users", key=f"u{i}".encode(), value=value.encode())
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return time.monotonic() - started


def produce_order(bootstrap: str, keys: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    doc = {
        "order_id": "o1",
        "user_id": f"u{keys // 2}",
        "ts": (T0 + timedelta(hours=1)).isoformat(),
    }
    producer.produce("table_orders", key=b"o1", value=json.dumps(doc).encode())
    assert producer.flush(30) == 0


def run_phase(phase: str, doc_path: Path) -> dict[str, Any]:
    """In a process of its own: `build` runs until caught up; `restart` until the first row."""
    started = time.monotonic()
    from streamsift.config import parse_pipeline
    from streamsift.engine.runner import PipelineRunner

    pipeline = parse_pipeline(json.loads(doc_path.read_text()))
    runner = PipelineRunner(pipeline)
    if phase == "build":
        run_started = time.monotonic()
        stats = runner.run(until_caught_up=True).stats
        return {"build_s": round(time.monotonic() - run_started, 1), "read": stats["read"]}
    run_started = time.monotonic()
    thread = threading.Thread(target=lambda: runner.run(until_caught_up=True), daemon=True)
    thread.start()
    while runner.writer.count(pipeline.sink.table) < 1:
        time.sleep(0.05)
    now = time.monotonic()
    thread.join(300)
    return {
        "first_row_from_process_start_s": round(now - started, 1),
        "first_row_from_run_start_s": round(now - run_started, 1),
    }


def state_bytes(checkpoint: Path) -> int:
    """The files under the checkpoint's `state` folder(s): Spark's state store."""
    stores = [d for d in checkpoint.rglob("state") if d.is_dir()]
    return sum(p.stat().st_size for d in stores for p in d.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--phase", choices=["build", "restart"], help=argparse.SUPPRESS)
    parser.add_argument("--doc", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase, args.doc)))
        return 0

    from streamsift.embedded.broker import Broker

    result: dict[str, Any] = {"keys": args.keys}
    with tempfile.TemporaryDirectory(prefix="measure-table-") as tmp_text:
        work = Path(tmp_text)
        with Broker(log_path=work / "tansu.log") as broker:
            broker.create_topic("table_users", 2)
            broker.create_topic("table_orders", 2)
            doc_path = work / "pipeline.json"
            doc_path.write_text(json.dumps(pipeline_doc(broker.bootstrap_servers, work)))
            result["produce_s"] = round(produce_users(broker.bootstrap_servers, args.keys), 1)

            def phase(name: str) -> dict[str, Any]:
                cmd = [sys.executable, __file__, "--phase", name, "--doc", str(doc_path)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise SystemExit(done.stderr[-3000:])
                return json.loads(done.stdout.strip().splitlines()[-1])

            result.update(phase("build"))
            result["state_bytes"] = state_bytes(work / "checkpoint")
            result["state_mb"] = round(result["state_bytes"] / 1e6, 1)
            produce_order(broker.bootstrap_servers, args.keys)
            result.update(phase("restart"))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
