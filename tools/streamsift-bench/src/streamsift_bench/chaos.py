"""kill -9 harness: run `streamsift run` on topics that keep growing, SIGKILL it at random
moments, restart it, and finally compare ClickHouse with the generator's truth.

Each round starts the pipeline as its own process group and kills the whole group (Python
driver, Spark JVM, Python workers) with SIGKILL, wherever it is: starting up, reading,
deduplicating, joining, inserting, or committing. The time before a kill is drawn from
[min_up, max_up] and counts from the process start, or, with `up_from="work"`, from the
moment the round's pipeline starts working on a micro-batch (Spark's start-up alone can
outlast max_up on a busy machine). Each kill is logged with where Spark's offset and commit
logs stood, and the report counts the kills that came after the round had done some work.

The shapes (what is produced, the pipeline, the verdict) are in chaos_shapes.py.
"""

from __future__ import annotations

import contextlib
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import clickhouse_connect
import yaml

from streamsift.embedded.broker import Broker
from streamsift.embedded.clickhouse_server import spawn_server
from streamsift.spark_host import processes
from streamsift_bench.chaos_shapes import ChaosOptions, Verdict, make_shape

__all__ = ["ChaosOptions", "ChaosReport", "run_chaos"]

WORK_TIMEOUT_S = 90.0  # up_from="work": kill anyway if a round shows no work by then


@dataclass
class ChaosReport(Verdict):
    mode: str
    kills: int
    seconds: float
    kill_times_s: list[float] = field(default_factory=list)
    shape: str = "dedup"  # "dedup", or "join (inner)" / "join (left)"
    kills_mid_run: int = 0  # kills after the round had planned, run or committed a batch

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
        head = (
            "| shape | mode | kills | produced | expected | in ClickHouse | missing | duplicated "
            "| DLQ expected | DLQ | verdict |"
        )
        sep = "|---|---|---|---|---|---|---|---|---|---|---|"
        row = (
            f"| {self.shape} | {self.mode} | {self.kills} | {self.produced:,} | "
            f"{self.expected:,} | {self.in_clickhouse:,} | {self.missing:,} | "
            f"{self.duplicated:,} | {self.dlq_expected:,} | {self.dlq_in_clickhouse:,} | "
            f"{'exact' if self.ok else 'MISMATCH'} |"
        )
        note = (
            f"{self.kills_mid_run} of {self.kills} kills came after the run had planned, run or "
            f"committed a micro-batch, the rest during start-up; {self.seconds:.0f}s in all"
        )
        return "\n".join([head, sep, row, "", note])


class _Producer(threading.Thread):
    """Runs a shape's producing in the background while the pipeline is being killed."""

    def __init__(self, work: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.work = work
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc


class _KillPhase:
    """How far the kill rounds have got, so a producer can spread its events over them all
    (rounds last as long as Spark takes to start, which varies a lot with the machine's load)."""

    def __init__(self, opts: ChaosOptions) -> None:
        self.kills = opts.kills
        up = (opts.min_up_s + opts.max_up_s) / 2
        self.guess_s = up + (20.0 if opts.up_from == "work" else 0.0)  # a round, before any ended
        self.started = time.monotonic()
        self.rounds = 0

    def remaining_s(self) -> float:
        elapsed = time.monotonic() - self.started
        per_round = elapsed / self.rounds if self.rounds else self.guess_s
        return max(0.0, per_round * self.kills - elapsed)


def run_chaos(opts: ChaosOptions, log: Any = print) -> ChaosReport:
    work = opts.work_dir.resolve()
    if (work / "checkpoint").exists() or (work / "clickhouse").exists():
        raise ValueError(f"{work} holds an earlier run (checkpoint, ClickHouse data): use another")
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(opts.seed)
    started = time.monotonic()
    with Broker() as broker:
        shape = make_shape(opts, broker.bootstrap_servers)
        shape.create_topics(broker)
        endpoint, port = (None, None)
        data_dir = work / "clickhouse"
        if opts.mode == "server":
            endpoint, port = spawn_server(data_dir)
            sink: dict[str, Any] = {"host": "127.0.0.1", "port": port}
        else:
            sink = {"path": str(data_dir)}
        path = work / "pipeline.yaml"
        path.write_text(yaml.safe_dump(shape.pipeline_doc(sink, work)))
        logs = work / "logs"
        logs.mkdir(exist_ok=True)
        phase = _KillPhase(opts)
        shape.phase = phase
        producer = _Producer(shape.produce)
        producer.start()
        kill_times: list[float] = []
        mid_run = 0
        proc: subprocess.Popen | None = None
        try:
            checkpoint = work / "checkpoint"
            for k in range(opts.kills):
                before = _activity(checkpoint)
                proc = processes.start(
                    [sys.executable, "-m", "streamsift.cli.main", "run", str(path)],
                    logs / f"run-{k + 1:02d}.log",
                    own_session=True,  # killed as one, PySpark's daemons included
                )
                waited = 0.0
                if opts.up_from == "work":
                    waited = _wait_for_work(proc, checkpoint, before, WORK_TIMEOUT_S)
                up = rng.uniform(opts.min_up_s, opts.max_up_s)
                time.sleep(up)
                stray = processes.kill_tree(proc)
                kill_times.append(round(waited + up, 1))
                working = _activity(checkpoint) != before  # a batch planned, run or committed
                mid_run += working
                phase.rounds += 1
                since = f"{waited:.1f}s + {up:.1f}s" if opts.up_from == "work" else f"{up:.1f}s"
                log(
                    f"kill {k + 1}/{opts.kills} after {since} (exit {proc.returncode}"
                    + (f", +{stray} PySpark worker processes" if stray else "")
                    + f"); {_describe(_batch_logs(checkpoint))}; "
                    + ("killed at work" if working else "killed during start-up")
                )
            producer.join()
            if producer.error:
                raise producer.error
            log(f"producing done; catching up ({time.monotonic() - started:.0f}s in)")
            shape.finish(path)
            log(f"caught up ({time.monotonic() - started:.0f}s in); comparing")
            if endpoint is None:
                endpoint, port = spawn_server(data_dir)
            client = clickhouse_connect.get_client(host="127.0.0.1", port=port)
            verdict = shape.verdict(client)
        finally:
            if proc is not None and proc.poll() is None:  # interrupted inside a round
                processes.kill_tree(proc)
            if endpoint is not None:
                processes.stop(endpoint, 10)
    return ChaosReport(
        mode=opts.mode,
        kills=opts.kills,
        **asdict(verdict),
        seconds=round(time.monotonic() - started, 1),
        kill_times_s=kill_times,
        shape=shape.label,
        kills_mid_run=mid_run,
    )


def _batch_logs(checkpoint: Path) -> tuple[int, int]:
    """The newest batch in Spark's offset log (planned) and commit log (done); -1: none."""

    def last(name: str) -> int:
        ids = [p.name for p in (checkpoint / "spark" / name).glob("[0-9]*")]
        return max((int(i) for i in ids if i.isdigit()), default=-1)

    return last("offsets"), last("commits")


def _activity(checkpoint: Path) -> tuple[Any, ...]:
    """What changes once a run works on a micro-batch: Spark's offset and commit logs (a batch
    planned or committed) and the dedup state directories (the source's partitions read, e.g.
    re-running an open batch: RocksDB files appear on open)."""
    stamps = []
    for d in sorted(checkpoint.glob("dedup/*/*")):
        with contextlib.suppress(OSError):
            stamps.append((d.name, d.parent.name, d.stat().st_mtime_ns))
    return (_batch_logs(checkpoint), tuple(stamps))


def _wait_for_work(
    proc: subprocess.Popen, checkpoint: Path, before: tuple[Any, ...], timeout_s: float
) -> float:
    """Wait until the run works on a micro-batch (or exits, or `timeout_s`); return seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s and proc.poll() is None:
        if _activity(checkpoint) != before:
            break
        time.sleep(0.2)
    return time.monotonic() - started


def _describe(logs: tuple[int, int]) -> str:
    planned, committed = logs
    if planned < 0:
        return "no batch planned yet"
    open_ = f", batch {planned} open" if planned > committed else ""
    return f"batches planned {planned + 1}, committed {committed + 1}{open_}"
