"""What a bench run is parameterised by: its options (recorded in results.json) and the
names of its scenarios, baselines and cluster runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCENARIOS = ("ingest", "dedup", "dedup-join")
LIVE_SCENARIOS = ("ingest", "dedup")
# `--master`: the result names of the two cluster drains and their executor cores.
CLUSTER_RUNS = {
    "dedup@1-worker": 1,
    "dedup@2-workers": 2,
}  # the join scenario is measured draining a backlog only
# Baseline run names -> the worker kind that runs them (isolated_run.run). A name ending in
# `_ingest` writes every message (no dedup) and runs only with the ingest scenario.
BASELINE_KINDS = {
    "raw_naive": "raw",  # json.loads per message, inserts on the loop's thread (baselines.py)
    "raw_naive_ingest": "raw",
    "raw_vec": "raw_vec",  # the vectorised ceiling (raw_vec.py)
    "raw_vec_ingest": "raw_vec",
    # raw_vec into the ClickHouse endpoint streamsift's server mode writes to (runs only with
    # --clickhouse server; raw_vec.py)
    "raw_vec_server": "raw_vec",
    "nospark": "nospark",  # streamsift's stages without Spark (nospark.py)
    "nospark_ingest": "nospark",
    "quix": "quix",
    "ch_final": "ch_final",
    "raw_join": "raw",
}
BASELINES = tuple(BASELINE_KINDS)
DEFAULT_BASELINES = tuple(b for b in BASELINES if b != "nospark_ingest")
SERVER_BASELINES = ("raw_vec_server",)  # baselines that write to the endpoint, not to chdb
BASELINE_ALIASES = {"raw": "raw_naive", "raw_ingest": "raw_naive_ingest"}  # older names


@dataclass
class BenchOptions:
    """Everything a bench run is parameterised by (recorded in results.json)."""

    scenarios: tuple[str, ...] = SCENARIOS
    baselines: tuple[str, ...] = DEFAULT_BASELINES
    # each drain run this many times, round-robin (A B A B): ratios per pair, their spread
    pairs: int = 2
    events: int = 200_000
    out: Path = Path(".streamsift/bench")
    partitions: int = 3
    duplicates: float = 0.2
    keys: int = 10_000
    payload_bytes: int = 1024
    seed: int = 7
    window: str = "1h"
    join_events: int | None = None  # right-stream messages of dedup-join (None: events / 10)
    join_left_window: str = "30s"
    join_right_window: str = "60s"
    join_unmatched: float = 0.1
    join_mode: str = "interval"  # dedup-join's join.mode: interval or latest
    live: bool = True
    live_scenarios: tuple[str, ...] | None = None  # None: every scenario also runs live
    latency_rates: tuple[int, ...] = (1_000, 5_000, 20_000)
    ramp_rates: tuple[int, ...] = (
        2_500,
        5_000,
        10_000,
        20_000,
        30_000,
        40_000,
        50_000,
        60_000,
        80_000,
    )
    step_seconds: float = 15.0
    max_rows_per_batch: int | None = None
    max_delay: str = "1s"  # streamsift's sink.max_delay_time: the trigger interval of live runs
    state_store: str = "rocksdb"  # streamsift's runtime.state_store (the join's state)
    spark_conf: dict[str, str] = field(default_factory=dict)  # every streamsift run's
    bootstrap_servers: str | None = None
    # "embedded": chdb inside each streamsift run's process (driver-side inserts); "server":
    # each streamsift run starts a chdb-backed ClickHouse HTTP endpoint as its own process on
    # its own data directory and inserts from the executors, as against a ClickHouse server.
    clickhouse: str = "embedded"
    keep_work: bool = False
    plots: bool = True
    profile: bool = False  # py-spy + JFR of every streamsift run into <out>/profiles/
    # > 0: also drain a second, larger dedup backlog of this many events (streamsift dedup,
    # the raw consumer, quixstreams), so the steady rate is not mostly warm-up (LARGE_RUNS)
    drain_events: int = 0
    soak_rate: int = 0  # > 0: run only the soak scenario at this rate (see _live)
    soak_seconds: float = 600.0
    soak_window: str = "7d"
    # The soak's producer batches: the bundled broker lists every batch of a partition on each
    # fetch, so 10 minutes of 50 ms batches (~12,000 a partition) slowed it until it stalled.
    soak_linger_ms: int = 500
    note: str = ""
    command: str = "streamsift bench"
    # A Spark cluster (spark://...): the dedup drain runs there twice, on one executor core
    # and on two (spark.cores.max), against a ClickHouse server endpoint (CLUSTER_RUNS).
    master: str | None = None

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["out"] = str(self.out)
        return doc
