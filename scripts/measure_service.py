"""Measure `streamsift serve`: time from create to first row, RSS with 0/1/3 pipelines, and the
status route's latency under concurrent clients. The closing figures of issue 12
(docs/operations.md, "Service: measured").

    .venv/bin/python scripts/measure_service.py [--pipelines 3] [--events 2000] \\
        [--clients 20] [--requests 50] [--idle 15] [--json out.json]

What it does, all on this machine: starts the bundled Kafka broker, then `streamsift serve
--port 0` on a fresh data dir (a subprocess, as a user runs it). Each pipeline is the
example `users-dedup` pipeline (embedded ClickHouse, which the service serves through its
chdb endpoint) over a topic of its own holding `--events` generated events
(streamsift.sample_data.generator, 20% re-sends).

- create -> first row: from the POST that creates a pipeline to the first row its table
  holds (polled every 50 ms through the service's ClickHouse endpoint); also create ->
  Running, and create -> every row.
- RSS: after `--idle` seconds with 0, 1 and N pipelines running (each idle, caught up): the
  server process alone, and its whole process tree (server, each pipeline's worker tree:
  Python, the Spark JVM, PySpark's workers; the ClickHouse endpoint). RSS summed over the
  tree counts shared pages more than once; PSS (proportional) does not, both are given.
- status p95: `--clients` concurrent clients (asyncio, one connection each) each sending
  `--requests` GET /api/v1/pipelines/{id}/status, round-robin over the running pipelines.

Nothing is timed in the test suite; run this twice on a quiet machine and compare.
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
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce
from streamsift.sdk import Client

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples/pipelines/users-dedup.yaml"
MB = 1024 * 1024


def start_serve(data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamsift.cli.main", "serve", "--port", "0"]
            + ["--data-dir", str(data_dir)],
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


def memory(pid: int) -> dict[str, float]:
    """RSS of the process alone, and RSS and PSS summed over its whole tree (MB)."""
    root = psutil.Process(pid)
    tree = [root, *root.children(recursive=True)]
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


def create_and_time(
    sdk: Client, doc: dict[str, Any], data_dir: Path, expected: int
) -> dict[str, float]:
    """Create the pipeline; seconds to Running, to its first row, and to all its rows."""
    name, table = doc["name"], doc["sink"]["table"]
    started = time.monotonic()
    sdk.create(doc)
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
        if count >= expected and running is not None:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", type=int, default=3, help="pipelines at the end (>= 1)")
    parser.add_argument("--events", type=int, default=2000, help="events per pipeline's topic")
    parser.add_argument("--clients", type=int, default=20, help="concurrent status clients")
    parser.add_argument("--requests", type=int, default=50, help="status requests per client")
    parser.add_argument("--idle", type=float, default=15.0, help="seconds idle before RSS")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_average_at_start": os.getloadavg(),
        "cpus": os.cpu_count(),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    with tempfile.TemporaryDirectory(prefix="measure-service-") as tmp_text:
        tmp = Path(tmp_text)
        data_dir, ch_path = tmp / "data", tmp / "clickhouse"
        with Broker(log_path=tmp / "tansu.log") as broker:
            serve, url = start_serve(data_dir, tmp / "serve.log")
            sdk = Client(url, timeout=120)
            names: list[str] = []
            try:
                time.sleep(args.idle)
                results["rss_0"] = memory(serve.pid)
                results["pipelines"] = {}
                for i in range(args.pipelines):
                    name = f"measure-{i}"
                    broker.create_topic(name, 3)
                    truth = Truth()
                    spec = EventSpec(args.events, 0.2, max(1, args.events // 10), seed=i)
                    produce(broker.bootstrap_servers, name, generate(spec, truth))
                    doc = pipeline_doc(name, broker, ch_path)
                    results["pipelines"][name] = create_and_time(
                        sdk, doc, data_dir, truth.expected_unique
                    )
                    names.append(name)
                    print(name, results["pipelines"][name], file=sys.stderr)
                    if i == 0:
                        time.sleep(args.idle)
                        results["rss_1"] = memory(serve.pid)
                time.sleep(args.idle)
                results[f"rss_{args.pipelines}"] = memory(serve.pid)
                latencies = asyncio.run(status_latencies(url, names, args.clients, args.requests))
                results["status_route"] = {
                    "requests": len(latencies),
                    "clients": args.clients,
                    "p50_ms": round(statistics.median(latencies) * 1000, 1),
                    "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
                    "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
                    "max_ms": round(max(latencies) * 1000, 1),
                }
            finally:
                for name in names:
                    try:
                        sdk.terminate(name)
                    except Exception as exc:  # noqa: BLE001 - leave nothing running, say why
                        print(f"terminate {name}: {exc}", file=sys.stderr)
                sdk.close()
                serve.send_signal(signal.SIGTERM)
                serve.wait(60)
                for record in (data_dir / "endpoints").glob("*.json"):  # the endpoint too
                    pid = int(json.loads(record.read_text())["pid"])
                    if psutil.pid_exists(pid):
                        os.kill(pid, signal.SIGTERM)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
