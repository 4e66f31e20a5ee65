"""kill -9 harness: run `streamsift run` on a topic that keeps growing, SIGKILL it at random
moments, restart it, and finally compare ClickHouse with the generator's truth.

Each round starts the pipeline as its own process group and kills the whole group (Python
driver, Spark JVM, Python workers) with SIGKILL, wherever it is: starting up, reading,
deduplicating, inserting, or committing. The verdict counts missing and doubled keys.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import clickhouse_connect
import yaml

from streamsift.testing.broker import Broker
from streamsift.testing.clickhouse_http import spawn_server
from streamsift.testing.generator import (
    EVENT_FIELDS,
    EVENT_MAPPING,
    EventSpec,
    Truth,
    generate,
    produce,
)


@dataclass(frozen=True)
class ChaosOptions:
    kills: int = 20
    events: int = 60_000
    duplicates: float = 0.2
    mode: str = "embedded"  # or "server": ClickHouse behind the HTTP endpoint, executor inserts
    min_up_s: float = 4.0
    max_up_s: float = 25.0
    seed: int = 1
    malformed_every: int = 500  # one bad payload per this many events (to count the DLQ too)
    work_dir: Path = Path(".streamsift/chaos")


@dataclass
class ChaosReport:
    mode: str
    kills: int
    produced: int
    expected: int
    in_clickhouse: int
    missing: int
    duplicated: int
    wrong_version: int
    dlq_expected: int
    dlq_in_clickhouse: int
    seconds: float
    kill_times_s: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.missing == 0
            and self.duplicated == 0
            and self.wrong_version == 0
            and self.in_clickhouse == self.expected
            and self.dlq_in_clickhouse == self.dlq_expected
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def table(self) -> str:
        head = "| mode | kills | produced | expected | in ClickHouse | missing | duplicated | DLQ expected | DLQ | verdict |"
        sep = "|---|---|---|---|---|---|---|---|---|---|"
        row = (
            f"| {self.mode} | {self.kills} | {self.produced:,} | {self.expected:,} | "
            f"{self.in_clickhouse:,} | {self.missing:,} | {self.duplicated:,} | "
            f"{self.dlq_expected:,} | {self.dlq_in_clickhouse:,} | {'exact' if self.ok else 'MISMATCH'} |"
        )
        return "\n".join([head, sep, row])


class _Producer(threading.Thread):
    """Produces the event stream in small slices while the pipeline is being killed."""

    def __init__(self, bootstrap: str, topic: str, opts: ChaosOptions, truth: Truth) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.opts, self.truth = bootstrap, topic, opts, truth
        self.malformed = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            events = generate(
                EventSpec(self.opts.events, self.opts.duplicates, 2_000, self.opts.seed), self.truth
            )
            batch: list[Any] = []
            for i, event in enumerate(events, 1):
                batch.append(event)
                if self.opts.malformed_every and i % self.opts.malformed_every == 0:
                    batch.append(b'{"event_id": "broken", "amount": ')
                    self.malformed += 1
                if len(batch) >= 2_000:
                    produce(self.bootstrap, self.topic, batch)
                    batch = []
                    time.sleep(0.5)
            if batch:
                produce(self.bootstrap, self.topic, batch)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc


def run_chaos(opts: ChaosOptions, log: Any = print) -> ChaosReport:
    work = opts.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(opts.seed)
    started = time.monotonic()
    with Broker() as broker:
        broker.create_topic("chaos", 3)
        endpoint, port = (None, None)
        data_dir = work / "clickhouse"
        if opts.mode == "server":
            endpoint, port = spawn_server(data_dir)
            sink = {"host": "127.0.0.1", "port": port}
        else:
            sink = {"path": str(data_dir)}
        doc = {
            "name": "chaos",
            "source": {
                "bootstrap_servers": broker.bootstrap_servers,
                "topic": "chaos",
                "schema": {"fields": EVENT_FIELDS, "event_time": "created_at"},
            },
            "dedup": {"key": "event_id", "time_window": "1h"},
            "sink": {
                "clickhouse": sink,
                "table": "events",
                "create_table": True,
                "mapping": EVENT_MAPPING,
                "max_batch_size": 2_000,
            },
            "runtime": {"checkpoint_dir": str(work / "checkpoint"), "max_rows_per_batch": 8_000},
        }
        path = work / "pipeline.yaml"
        path.write_text(yaml.safe_dump(doc))
        truth = Truth()
        producer = _Producer(broker.bootstrap_servers, "chaos", opts, truth)
        producer.start()
        kill_times = []
        try:
            for k in range(opts.kills):
                proc = _start(path)
                up = rng.uniform(opts.min_up_s, opts.max_up_s)
                time.sleep(up)
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kill_times.append(round(up, 1))
                log(f"kill {k + 1}/{opts.kills} after {up:.1f}s (exit {proc.returncode})")
            producer.join()
            if producer.error:
                raise producer.error
            final = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "streamsift.cli.main",
                    "run",
                    str(path),
                    "--until-caught-up",
                ],
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if final.returncode != 0:
                raise RuntimeError(f"final catch-up run failed: {final.stderr[-2000:]}")
            if endpoint is None:
                endpoint, port = spawn_server(data_dir)
            client = clickhouse_connect.get_client(host="127.0.0.1", port=port)
            counts = dict(
                client.query("SELECT event_id, count() FROM events GROUP BY event_id").result_rows
            )
            wrong = int(client.command("SELECT count() FROM events WHERE attempt > 0"))
            dlq = int(client.command("SELECT count() FROM events_dlq"))
        finally:
            if endpoint is not None and endpoint.poll() is None:
                endpoint.terminate()
                endpoint.wait(10)
    expected = set(truth.first_versions)
    return ChaosReport(
        mode=opts.mode,
        kills=opts.kills,
        produced=truth.produced + producer.malformed,
        expected=len(expected),
        in_clickhouse=sum(counts.values()),
        missing=len(expected - set(counts)),
        duplicated=sum(c - 1 for c in counts.values() if c > 1),
        wrong_version=wrong,
        dlq_expected=producer.malformed,
        dlq_in_clickhouse=dlq,
        seconds=round(time.monotonic() - started, 1),
        kill_times_s=kill_times,
    )


def _start(path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "streamsift.cli.main", "run", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
