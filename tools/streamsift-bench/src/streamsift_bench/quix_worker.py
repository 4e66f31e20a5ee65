"""The quixstreams baseline: `<quix python> -m streamsift_bench.quix_worker SPEC.json`.

What a user would write with quixstreams instead of streamsift: an Application reading the
topic, a stateful filter keeping the first version of each event id in its RocksDB state
store, and a BatchingSink that inserts each checkpoint's rows into ClickHouse with Arrow.
Quix defaults are kept (commit every 5 s, changelog topics on, at-least-once).

It runs in the isolated interpreter of quixenv.py, so it imports only quixstreams,
confluent-kafka, pyarrow, clickhouse-connect and streamsift_bench.common.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import Any

from streamsift_bench.common import (
    ProgressLog,
    create_table_sql,
    dir_bytes,
    rows_to_arrow,
    run_worker,
    verify,
)

TABLE = "events"


def run_quix(spec: dict[str, Any], progress: ProgressLog) -> dict[str, Any]:
    import clickhouse_connect
    from quixstreams import Application
    from quixstreams.sinks import BatchingSink, SinkBatch

    work = Path(spec["work_dir"])
    client = clickhouse_connect.get_client(dsn=f"chdb://{work / 'clickhouse'}")
    client.command(create_table_sql(TABLE))
    truth = spec["truth"]
    total = truth["produced"]
    counters = {"consumed": 0, "written": 0, "inserts": 0}
    marks: dict[str, float] = {}

    class ClickHouseSink(BatchingSink):
        """Insert each partition's batch of a checkpoint as one Arrow insert."""

        def write(self, batch: SinkBatch) -> None:
            rows = [item.value for item in batch]
            if rows:
                client.insert_arrow(TABLE, rows_to_arrow(rows))
                counters["written"] += len(rows)
                counters["inserts"] += 1
                marks["last_insert"] = time.time()
                if "first_insert" not in marks:  # the end of its "first batch" (steady rate)
                    marks["first_insert"] = marks["last_insert"]
                    counters["first_insert_read"] = counters["consumed"]
                progress.write(read=counters["consumed"], written=counters["written"])

    stopper: dict[str, Any] = {}

    def on_processed(_topic: str, _partition: int, _offset: int) -> None:
        counters["consumed"] += 1
        if counters["consumed"] == 1:
            marks["first"] = time.time()
        if counters["consumed"] >= total:
            stopper["app"].stop()  # the final checkpoint flushes the sink

    app = Application(
        broker_address=spec["bootstrap_servers"],
        consumer_group=f"bench-quix-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        state_dir=str(work / "state"),
        consumer_extra_config={"session.timeout.ms": 6000, "fetch.wait.max.ms": 10},
        loglevel="WARNING",
        on_message_processed=on_processed,
    )
    stopper["app"] = app
    topic = app.topic(spec["topic"], value_deserializer="json", key_deserializer="str")
    sdf = app.dataframe(topic)

    def first_wins(value: dict, state: Any) -> bool:
        if state.get("seen"):
            return False
        state.set("seen", 1)
        return True

    sdf = sdf.filter(first_wins, stateful=True)
    sdf.sink(ClickHouseSink())
    app.run()
    done_at = marks.get("last_insert") or time.time()
    progress.write(read=counters["consumed"], written=counters["written"])

    def query(sql: str) -> tuple:
        return client.query(sql).result_rows[0]

    def rows(sql: str) -> list[tuple]:
        return list(client.query(sql).result_rows)

    check = verify(query, TABLE, truth, dedup=True, rows=rows)
    steady = None
    after = marks.get("first_insert")
    if after is not None and done_at > after:
        later = counters["consumed"] - counters["first_insert_read"]
        steady = round(later / (done_at - after), 1) if later > 0 else None
    started = spec["process_started"]
    first = marks.get("first", done_at)
    import quixstreams

    return {
        "read": counters["consumed"],
        "written": counters["written"],
        "inserts": counters["inserts"],
        "processing_seconds": round(done_at - first, 3),
        "wall_seconds": round(done_at - started, 3),
        "startup_seconds": round(first - started, 3),
        "processing_started_at": first,
        "done_at": done_at,
        "after_first_batch_rate": steady,
        "state_bytes": dir_bytes(work / "state"),
        "sink_bytes": dir_bytes(work / "clickhouse"),
        "quixstreams_version": quixstreams.__version__,
        **check,
    }


def main(argv: list[str] | None = None) -> int:
    return run_worker(argv, run_quix)


if __name__ == "__main__":
    sys.exit(main())
