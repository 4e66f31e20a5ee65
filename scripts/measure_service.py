"""Measure `streamsift serve` in both placements of its pipelines (issue 28): the pipeline
host (`--isolation host`, every pipeline a query of one Spark application) and a process per
pipeline (`--isolation process`), in one run, side by side.

    .venv/bin/python scripts/measure_service.py [--counts 0,1,5,10,20] [--process-counts 0,1,5] \
        [--creates 5] [--events 2000] [--drain-events 200000] [--idle 20] [--json out.json]

All on this machine: the bundled Kafka broker, then `streamsift serve --port 0 --isolation
MODE` on a fresh data dir (a subprocess, as a user runs it). A dedup pipeline is the example
`users-dedup` (embedded ClickHouse, served through the service's chdb endpoint) over a topic
of its own holding `--events` generated events (streamsift.sample_data.generator, 20%
re-sends); a join pipeline is the demo's orders ⋈ user profiles.

- idle cost: with 0, 1, 5, ... idle dedup pipelines (each caught up), after `--settle` seconds:
  RSS and PSS summed over the server's whole process tree (server, pipeline host or workers,
  PySpark's Python workers, the ClickHouse endpoint; RSS counts shared pages more than once,
  PSS does not) and the tree's CPU over the next `--idle` seconds, as a share of one core.
- create -> first row: from the POST that creates a pipeline to the first row in its table
  (polled every 50 ms), for the first `--creates` pipelines (p50 and each), and for one join
  pipeline. In host mode the host is warm before the first create (`serve` starts it).
- drain: one pipeline alone drains `--drain-events`; then five pipelines, created at once,
  drain a fifth each. Events per second from the first create to the last row, summed;
  and each pipeline's own rate (read per second of micro-batch time).

Nothing is timed in the test suite; run this on a quiet machine and compare.
It runs in the dev environment of `make setup` (psutil comes with tools/streamsift-bench).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import clickhouse_connect
import httpx
import psutil
import yaml

from streamsift.embedded.broker import Broker
from streamsift.sample_data.generator import (
    EventSpec,
    JoinSpec,
    Truth,
    generate,
    generate_join_streams,
    produce,
)
from streamsift.sample_data.join_events import join_pipeline_doc
from streamsift.sdk import Client

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples/pipelines/users-dedup.yaml"
MB = 1024 * 1024
MAX_DELAY: str | None = None  # --max-delay: the dedup pipelines' sink.max_delay_time


def start_serve(data_dir: Path, log: Path, isolation: str) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamsift.cli.main", "serve", "--port", "0"]
            + ["--data-dir", str(data_dir), "--isolation", isolation, "--no-otlp"],
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        lines = [x for x in log.read_text().splitlines() if "listening on" in x]
        if lines:
            url = lines[-1].split()[2]
            try:
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    return proc, url
            except httpx.TransportError:
                pass
        if proc.poll() is not None:
            raise SystemExit(f"serve exited: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    raise SystemExit("serve did not become ready")


def tree_of(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def cpu_seconds(tree: list[psutil.Process]) -> float:
    total = 0.0
    for proc in tree:
        try:
            times = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        total += times.user + times.system
    return total


KINDS = (  # what a process of the tree is, by its command line (first match)
    ("endpoint", "clickhouse_server"),
    ("source runners", "python_streaming_source_runner"),
    ("python workers", "pyspark.daemon"),
    ("jvm", "java"),
    ("host python", "pipeline_host"),
    ("worker python", "pipeline_process"),
    ("server", "serve"),
)


def kind_of(proc: psutil.Process) -> str:
    try:
        line = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "other"
    return next((kind for kind, mark in KINDS if mark in line), "other")


def idle_cost(pid: int, seconds: float) -> dict[str, Any]:
    """The tree's memory now, and its CPU over the next `seconds` (share of one core), in all
    and by kind of process."""
    figures: dict[str, Any] = memory(pid)
    tree = tree_of(pid)
    before = {proc.pid: cpu_seconds([proc]) for proc in tree}
    time.sleep(seconds)
    by_kind: dict[str, float] = {}
    for proc in tree:
        used = cpu_seconds([proc]) - before[proc.pid]
        by_kind[kind_of(proc)] = by_kind.get(kind_of(proc), 0.0) + max(used, 0.0)
    figures["idle_cpu_share_of_core"] = round(sum(by_kind.values()) / seconds, 4)
    figures["idle_cpu_by_kind"] = {k: round(v / seconds, 4) for k, v in sorted(by_kind.items())}
    return figures


def memory(pid: int) -> dict[str, float]:
    """RSS of the process alone, and RSS and PSS summed over its whole tree (MB)."""
    root = psutil.Process(pid)
    tree = tree_of(pid)
    rss = pss = 0
    for proc in tree:
        try:
            info = proc.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
    return {
        "server_rss_mb": round(root.memory_info().rss / MB, 1),
        "tree_rss_mb": round(rss / MB, 1),
        "tree_pss_mb": round(pss / MB, 1),
        "processes": len(tree),
    }


def pipeline_doc(name: str, broker: Broker, ch_path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["name"] = name
    doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
    doc["source"]["topic"] = name
    doc["sink"]["clickhouse"]["path"] = str(ch_path)
    doc["sink"]["table"] = name.replace("-", "_")
    doc["dlq"]["table"] = name.replace("-", "_") + "_dlq"
    if MAX_DELAY:
        doc["sink"]["max_delay_time"] = MAX_DELAY
    return doc


def endpoint_port(data_dir: Path) -> int | None:
    for record in (data_dir / "endpoints").glob("*.json"):
        return int(json.loads(record.read_text())["port"])
    return None


def table_rows(port: int, table: str) -> int:
    client = clickhouse_connect.get_client(host="127.0.0.1", port=port)
    try:
        if not int(client.command(f"EXISTS TABLE {table}")):
            return 0
        return int(client.command(f"SELECT count() FROM {table}"))
    finally:
        client.close()


def join_doc(name: str, broker: Broker, ch_path: Path, data_dir: Path) -> dict[str, Any]:
    doc = join_pipeline_doc(
        broker.bootstrap_servers, data_dir, "inner", clickhouse={"path": str(ch_path)}, name=name
    )
    for source, topic in zip(doc["sources"], (f"{name}-orders", f"{name}-users"), strict=True):
        source["topic"] = topic
    doc["sink"]["table"] = name.replace("-", "_")
    del doc["runtime"]["checkpoint_dir"]  # the service's own place
    return doc


def produce_join(broker: Broker, name: str, orders: int) -> None:
    streams = generate_join_streams(JoinSpec(orders=orders, users=max(1, orders // 10), seed=3))
    for topic, events, key in (
        (f"{name}-orders", streams.orders, "order_id"),
        (f"{name}-users", streams.users, "event_id"),
    ):
        broker.create_topic(topic, 2)
        produce(broker.bootstrap_servers, topic, events, key_field=key)


def dedup_topic(broker: Broker, name: str, events: int, seed: int) -> int:
    """A topic of generated events; how many rows a correct dedup keeps."""
    broker.create_topic(name, 3)
    truth = Truth()
    # 1 ms of event time per event: a million span 17 minutes, so every re-send falls inside
    # the pipelines' 1 h dedup window (an older one is late, kept, and the count would differ)
    spec = EventSpec(events, 0.2, max(1, min(10_000, events // 10)), seed=seed, step_ms=1)
    produce(broker.bootstrap_servers, name, generate(spec, truth))
    return truth.expected_unique


def create_and_time(
    sdk: Client, doc: dict[str, Any], data_dir: Path, expected: int | None
) -> dict[str, float]:
    """Create the pipeline; seconds to Running, to its first row, and to all its rows (to the
    first row only when `expected` is None)."""
    started = time.monotonic()
    sdk.create(doc)
    return wait_rows(sdk, doc, data_dir, expected, started)


def wait_rows(
    sdk: Client, doc: dict[str, Any], data_dir: Path, expected: int | None, started: float
) -> dict[str, float]:
    name, table = doc["name"], doc["sink"]["table"]
    running = first = None
    while True:
        now = time.monotonic() - started
        if running is None and sdk.get(name).state == "Running":
            running = now
        if sdk.get(name).state == "Failed":
            raise SystemExit(f"{name} failed: {sdk.status(name).error}")
        port = endpoint_port(data_dir)
        count = table_rows(port, table) if port else 0
        if first is None and count > 0:
            first = now
            if expected is None:
                return {"to_first_row_s": round(first, 2)}
        if expected is not None and count >= expected and running is not None:
            if count != expected:
                raise SystemExit(f"{name}: {count} rows, expected {expected}")
            return {
                "to_running_s": round(running, 2),
                "to_first_row_s": round(first or now, 2),
                "to_all_rows_s": round(now, 2),
            }
        if now > 600:
            raise SystemExit(f"{name}: {count} of {expected} rows after 600 s")
        time.sleep(0.05)


async def status_latencies(url: str, names: list[str], clients: int, requests: int) -> list[float]:
    async def one_client(index: int) -> list[float]:
        times = []
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            for i in range(requests):
                name = names[(index + i) % len(names)]
                started = time.perf_counter()
                answer = await client.get(f"/api/v1/pipelines/{name}/status")
                times.append(time.perf_counter() - started)
                answer.raise_for_status()
        return times

    results = await asyncio.gather(*(one_client(i) for i in range(clients)))
    return [t for r in results for t in r]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def drain(
    sdk: Client, broker: Broker, data_dir: Path, ch_path: Path, events: int, count: int
) -> dict[str, Any]:
    """`count` dedup pipelines created at once, `events` in all: events per second from the
    first create to the last row, and each pipeline's own rate."""
    docs, expected = [], []
    for i in range(count):
        name = f"drain{count}-{i}"
        expected.append(dedup_topic(broker, name, events // count, seed=100 + i))
        docs.append(pipeline_doc(name, broker, ch_path))
    started = time.monotonic()
    for doc in docs:
        sdk.create(doc)
    done = [
        wait_rows(sdk, doc, data_dir, n, started) for doc, n in zip(docs, expected, strict=True)
    ]
    wall = max(d["to_all_rows_s"] for d in done)
    time.sleep(2.0)  # each run's status is rewritten about once a second
    rates = [sdk.status(doc["name"]).rows_per_second for doc in docs]
    for doc in docs:
        sdk.terminate(doc["name"])
        sdk.delete(doc["name"])
    return {
        "pipelines": count,
        "events": events,
        "wall_s": wall,
        "events_per_s": round(events / wall, 1),
        "per_pipeline_processing_rate": rates,
    }


def measure(isolation: str, counts: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """Every figure of one placement (see the module docstring)."""
    results: dict[str, Any] = {"isolation": isolation}
    with tempfile.TemporaryDirectory(prefix=f"measure-{isolation}-") as tmp_text:
        tmp = Path(tmp_text)
        data_dir = tmp / "data"
        ch_path = data_dir / "clickhouse"
        with Broker(log_path=tmp / "tansu.log") as broker:
            serve, url = start_serve(data_dir, tmp / "serve.log", isolation)
            sdk = Client(url, timeout=120)
            names: list[str] = []
            try:
                if isolation == "host":  # warm before the first create
                    deadline = time.monotonic() + 240
                    while not (data_dir / "host" / "host.json").exists():
                        if time.monotonic() > deadline:
                            raise SystemExit("the pipeline host did not start")
                        time.sleep(0.2)
                time.sleep(args.idle)
                results["idle"] = {}
                results["creates"] = {}
                for target in counts:
                    while len(names) < target:
                        name = f"measure-{len(names)}"
                        expected = dedup_topic(broker, name, args.events, seed=len(names))
                        doc = pipeline_doc(name, broker, ch_path)
                        timing = create_and_time(sdk, doc, data_dir, expected)
                        if len(names) < args.creates:
                            results["creates"][name] = timing
                        names.append(name)
                        print(isolation, name, timing, file=sys.stderr, flush=True)
                    time.sleep(args.settle if args.settle is not None else args.idle)
                    results["idle"][str(target)] = idle_cost(serve.pid, args.idle)
                    print(isolation, target, results["idle"][str(target)], file=sys.stderr)
                firsts = [t["to_first_row_s"] for t in results["creates"].values()]
                if firsts:
                    results["create_to_first_row_p50_s"] = statistics.median(firsts)
                latencies = asyncio.run(status_latencies(url, names, args.clients, args.requests))
                results["status_route_p95_ms"] = round(percentile(latencies, 0.95) * 1000, 1)
                for name in names:
                    sdk.terminate(name)
                    sdk.delete(name)
                names = []
                produce_join(broker, "join0", args.join_events)
                join = join_doc("join0", broker, ch_path, data_dir)
                results["join_create_to_first_row_s"] = create_and_time(sdk, join, data_dir, None)[
                    "to_first_row_s"
                ]
                sdk.terminate("join0")
                sdk.delete("join0")
                if args.drain_events:
                    try:
                        one = drain(sdk, broker, data_dir, ch_path, args.drain_events, 1)
                        five = drain(sdk, broker, data_dir, ch_path, args.drain_events, 5)
                    except SystemExit as exc:  # the other figures still count
                        results["drain_error"] = str(exc)
                    else:
                        results["drain_1"], results["drain_5"] = one, five
                        results["drain_5_over_1"] = round(
                            five["events_per_s"] / one["events_per_s"], 3
                        )
            finally:
                for name in names:
                    try:
                        sdk.terminate(name)
                    except Exception as exc:  # noqa: BLE001 - leave nothing running, say why
                        print(f"terminate {name}: {exc}", file=sys.stderr)
                sdk.close()
                serve.send_signal(signal.SIGTERM)
                serve.wait(120)
                for record in (data_dir / "endpoints").glob("*.json"):  # the endpoint too
                    pid = int(json.loads(record.read_text())["pid"])
                    if psutil.pid_exists(pid):
                        os.kill(pid, signal.SIGTERM)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="0,1,5,10,20", help="idle pipelines, host mode")
    parser.add_argument("--process-counts", default="0,1,5", help="idle pipelines, process mode")
    parser.add_argument("--creates", type=int, default=5, help="creates timed for the p50")
    parser.add_argument("--events", type=int, default=2000, help="events per idle pipeline")
    parser.add_argument("--join-events", type=int, default=2000, help="orders of the join")
    parser.add_argument("--drain-events", type=int, default=200_000, help="0: no drain")
    parser.add_argument("--clients", type=int, default=20, help="concurrent status clients")
    parser.add_argument("--requests", type=int, default=20, help="status requests per client")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds idle, then measured")
    parser.add_argument(
        "--settle",
        type=float,
        help="seconds idle before measuring (default --idle); Spark keeps an idle Python "
        "worker a minute, so 75 measures the steady state without them",
    )
    parser.add_argument("--modes", default="host,process", help="placements, in this order")
    parser.add_argument("--max-delay", help="the dedup pipelines' max_delay_time (default 500ms)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    global MAX_DELAY
    MAX_DELAY = args.max_delay

    def numbers(text: str) -> list[int]:
        return [int(x) for x in text.split(",") if x.strip()]

    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_average_at_start": os.getloadavg(),
        "cpus": os.cpu_count(),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    for mode in args.modes.split(","):
        counts = numbers(args.counts if mode == "host" else args.process_counts)
        results[mode] = measure(mode, counts, args)
        if args.json:  # what is measured so far survives a later failure
            args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
