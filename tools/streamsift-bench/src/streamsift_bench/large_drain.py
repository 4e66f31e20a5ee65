"""The bench's large dedup drain (`--drain-events N`, `--scenario large-drain`).

A second backlog, N events from the same generator settings in its own topic with its own
truth, drained by streamsift dedup and the raw consumer and quixstreams baselines (those of
`--baselines`), so that streamsift's steady rate covers most of the run rather than its
warm-up. The results sit in the drain table as `dedup-large`, `raw_naive-large`,
`raw_vec-large`, `nospark-large`, `quix-large` (those of the baselines asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from streamsift.embedded.broker import Broker, create_topic
from streamsift_bench.common import TOPIC_CONFIG
from streamsift_bench.loadgen import LoadGenerator, LoadSpec

# result name -> the run kind it drains with
LARGE_RUNS = {
    "dedup-large": "dedup",
    "raw_naive-large": "raw_naive",
    "raw_vec-large": "raw_vec",
    "nospark-large": "nospark",
    "quix-large": "quix",
}
LARGE_DRAIN_EVENTS = 2_000_000  # `--scenario large-drain` without --drain-events


@dataclass(frozen=True)
class Backlog:
    """A loaded topic the drain runs read, its truth, and the rows admitted per batch."""

    topic: str
    truth: dict[str, Any]
    truth_path: Path
    batch_rows: int | None


class DrainingBench(Protocol):
    """What the large drain uses of a bench run (streamsift_bench/runner.py's Bench)."""

    opts: Any
    bootstrap: str
    broker: Broker | None
    work: Path
    results: dict[str, Any]

    def log(self, msg: str) -> None: ...
    def topic_name(self, label: str) -> str: ...
    def load_spec(self, **over: Any) -> LoadSpec: ...
    def drain_rounds(
        self,
        runs: list[tuple[str, str]],
        quix_python: str | None,
        backlog: Backlog | None = None,
    ) -> None: ...


def large_drain(bench: DrainingBench, quix_python: str | None) -> None:
    """Load `drain_events` events and drain them with each large run. Admission per
    micro-batch: `--max-rows-per-batch`, else the pipeline's default, as a user gets it."""
    opts = bench.opts
    topic = bench.topic_name("large")
    create_topic(bench.bootstrap, topic, opts.partitions, TOPIC_CONFIG)
    gen = LoadGenerator(bench.load_spec(), bench.bootstrap, topic)
    bench.log(f"large drain: loading {opts.drain_events:,} events into {topic}")
    report = gen.send(opts.drain_events, None)
    gen.close()
    truth_path = bench.work / "large-truth.json"
    gen.write_truth(truth_path, {"send": report.as_dict()})
    truth = gen.truth.as_dict()
    dataset = {"topic": topic, **truth, "producer": report.as_dict()}
    if bench.broker is not None and bench.broker.process is not None:
        # the bundled broker keeps every message in memory: what the backlog costs it
        rss = psutil.Process(bench.broker.process.pid).memory_info().rss
        dataset["broker_rss_mb"] = round(rss / 2**20)
    bench.results["dataset_large"] = dataset
    backlog = Backlog(topic, truth, truth_path, opts.max_rows_per_batch)
    names = [r for r, name in LARGE_RUNS.items() if name == "dedup" or name in opts.baselines]
    bench.drain_rounds([(r, LARGE_RUNS[r]) for r in names], quix_python, backlog=backlog)
