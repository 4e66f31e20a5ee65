"""`streamsift bench`: run the scenarios and baselines on one data set, measure, report.

One run of the bench:

1. starts the bundled broker (or uses the one given) and loads a backlog of N events with
   the load generator (20% re-sends, 1 KB, keyed by event id), writing its ground truth;
   with the `dedup-join` scenario, the generator also loads the join's right stream (user
   profile events, N/10 by default, into a second topic) and the truth of the join;
2. drains that backlog once per run kind, each in its own worker process with its own chdb
   directory: the baselines (raw consumer, quixstreams, ClickHouse-side dedup; for
   dedup-join a raw consumer with an in-memory join) and streamsift's scenarios (`ingest`:
   parse + insert; `dedup`: + first-wins dedup, 1h window; `dedup-join`: both topics
   deduplicated, then an inner join on the user id), all through the real code paths
   (streamsift runs the real PipelineRunner);
3. per streamsift scenario but dedup-join, a live run: the pipeline runs continuously while
   the generator produces fixed-rate steps (latency at e.g. 1k/5k/20k events/s) and then a
   stepped ramp that stops at the first rate whose lag does not stay bounded;
4. checks every run against the truth (a mismatch fails the run: it gets no numbers), and
   writes results.json, report.md and PNG plots.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamsift.embedded.broker import Broker, create_topic
from streamsift.spark_host import processes
from streamsift_bench.common import DRAIN_GRACE_S, TOPIC_CONFIG, read_progress
from streamsift_bench.large_drain import Backlog, large_drain
from streamsift_bench.loadgen import JoinLoadSpec, LoadGenerator, LoadSpec
from streamsift_bench.measures import (
    attach_batch_phases,
    attach_latency,
    drain_rates,
    judge_step,
    load_average,
    machine_info,
    memory_flatness,
    ramp_limit,
    sustained_rate,
)
from streamsift_bench.profiles import Profiler
from streamsift_bench.resources import CpuParties, TreeSampler, process_cpu

SCENARIOS = ("ingest", "dedup", "dedup-join")
LIVE_SCENARIOS = ("ingest", "dedup")
# `--master`: the result names of the two cluster drains and their executor cores.
CLUSTER_RUNS = {
    "dedup@1-worker": 1,
    "dedup@2-workers": 2,
}  # the join scenario is measured draining a backlog only
BASELINES = ("raw", "raw_ingest", "quix", "ch_final", "raw_join")
# Topics get these explicitly: the bundled broker reports only configs set at creation, and
# quixstreams reads retention.ms/retention.bytes of its input topic.
WARMUP_EVENTS = 2_000
PREPARE_MAX_BYTES = 1 << 30

Log = Callable[[str], None]


@dataclass
class BenchOptions:
    """Everything a bench run is parameterised by (recorded in results.json)."""

    scenarios: tuple[str, ...] = SCENARIOS
    baselines: tuple[str, ...] = BASELINES
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


@dataclass
class Run:
    """Paths and process of one worker run."""

    name: str
    dir: Path
    spec: dict[str, Any]
    progress_path: Path = field(init=False)
    result_path: Path = field(init=False)
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.progress_path = self.dir / "progress.jsonl"
        self.result_path = self.dir / "result.json"
        self.log_path = self.dir / "worker.log"


class Bench:
    """One bench run; `run()` returns the results document (also written to disk)."""

    def __init__(self, opts: BenchOptions, log: Log = print) -> None:
        self.opts = opts
        self.log = log
        self.out = Path(opts.out).resolve()
        self.work = self.out / "work"
        self.run_id = uuid.uuid4().hex[:6]
        self.broker: Broker | None = None
        self.bootstrap = opts.bootstrap_servers or ""
        self.results: dict[str, Any] = {}
        self.backlog: Backlog | None = None  # the main backlog, once loaded
        self.drain_batch_rows = opts.max_rows_per_batch or max(10_000, -(-opts.events // 4))
        self.profiler = Profiler(self.out / "profiles") if opts.profile else None

    @property
    def broker_pid(self) -> int | None:
        """The bundled broker's process (None with --bootstrap-servers)."""
        return self.broker.process.pid if self.broker and self.broker.process else None

    # ------------------------------------------------------------------ driver

    def run(self) -> dict[str, Any]:
        opts = self.opts
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)
        started = time.time()
        self.results = {
            "schema": 1,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "command": opts.command,
            "options": {**opts.as_dict(), "drain_batch_rows": self.drain_batch_rows},
            "machine": machine_info(),
            "drain": {},
            "live": {},
        }
        wants_quix = "quix" in opts.baselines and not opts.soak_rate
        quix_python = self._quix_python() if wants_quix else None
        try:
            if not opts.bootstrap_servers:
                self.broker = Broker(log_path=self.work / "tansu.log").start()
                self.bootstrap = self.broker.bootstrap_servers
            if opts.soak_rate:
                self.results["live"]["soak"] = self._live("soak")
                return self._done(started)
            if opts.scenarios:
                self.results["dataset"] = self._load_backlog()
            for name in opts.baselines if opts.scenarios else ():
                if name == "raw_ingest" and "ingest" not in opts.scenarios:
                    continue
                if name == "raw_join" and "dedup-join" not in opts.scenarios:
                    continue
                self.results["drain"][name] = self.drain(name, quix_python)
            if opts.master:
                for label, cores in CLUSTER_RUNS.items():
                    self.results["drain"][label] = self.drain("dedup", None, cores)
                return self._done(started)
            for scenario in opts.scenarios:
                self.results["drain"][scenario] = self.drain(scenario, None)
            if opts.drain_events:
                large_drain(self, quix_python)
            if opts.live:
                live = opts.scenarios if opts.live_scenarios is None else opts.live_scenarios
                for scenario in (s for s in live if s in LIVE_SCENARIOS):
                    self.results["live"][scenario] = self._live(scenario)
        finally:
            if self.broker is not None:
                self.broker.stop()
        return self._done(started)

    def _done(self, started: float) -> dict[str, Any]:
        from streamsift_bench.report import finish

        if self.broker is not None:
            self.broker.stop()
        self.results["machine"]["load_average_end"] = load_average()
        self.results["duration_seconds"] = round(time.time() - started, 1)
        finish(self.results, self.out, plots=self.opts.plots)
        if not self.opts.keep_work:
            self._clean_work()
        return self.results

    def _clean_work(self) -> None:
        """Drop data dirs (chdb, checkpoints); keep each run's logs, progress and result."""
        for sub in self.work.glob("*/data"):
            shutil.rmtree(sub, ignore_errors=True)

    def _quix_python(self) -> str | None:
        from streamsift_bench.quixenv import QuixEnvError, ensure_quix_python

        try:
            return str(ensure_quix_python(log=self.log))
        except QuixEnvError as exc:
            self.log(f"quixstreams baseline unavailable: {exc}")
            self.results["quix_unavailable"] = str(exc)
            return None

    # ------------------------------------------------------------------ data

    def topic_name(self, label: str) -> str:
        return f"bench-{self.run_id}-{label}"

    def load_spec(self, **over: Any) -> LoadSpec:
        o = self.opts
        fields: dict[str, Any] = {
            "duplicates": o.duplicates,
            "keys": o.keys,
            "payload_bytes": o.payload_bytes,
            "seed": o.seed,
        }
        return LoadSpec(**{**fields, **over})

    def _join_spec(self) -> JoinLoadSpec:
        from streamsift.config.durations import parse_duration

        o = self.opts
        return JoinLoadSpec(
            right_events=o.events // 10 if o.join_events is None else o.join_events,
            left_events=o.events,
            duplicates=o.duplicates,
            unmatched=o.join_unmatched,
            left_window=parse_duration(o.join_left_window),
            right_window=parse_duration(o.join_right_window),
            dedup_window=parse_duration(o.window),
        )

    def _load_backlog(self) -> dict[str, Any]:
        topic = self.topic_name("backlog")
        create_topic(self.bootstrap, topic, self.opts.partitions, TOPIC_CONFIG)
        join_topic = join = None
        if "dedup-join" in self.opts.scenarios:
            # The same events (the generator's join stream has its own random sequence), plus
            # the profile events in a second topic, produced alongside.
            join_topic, join = self.topic_name("backlog-profiles"), self._join_spec()
            create_topic(self.bootstrap, join_topic, self.opts.partitions, TOPIC_CONFIG)
        gen = LoadGenerator(
            self.load_spec(), self.bootstrap, topic, join=join, join_topic=join_topic
        )
        also = f" and {join.right_events:,} profile events into {join_topic}" if join else ""
        self.log(f"loading {self.opts.events:,} events into {topic}{also}")
        report = gen.send(self.opts.events, None)
        gen.close()
        self.truth_path = self.work / "backlog-truth.json"
        gen.write_truth(self.truth_path, {"send": report.as_dict()})
        self.truth = gen.truth.as_dict()
        self.backlog = Backlog(topic, self.truth, self.truth_path, self.drain_batch_rows)
        dataset = {"topic": topic, **self.truth, "producer": report.as_dict()}
        if join is not None:
            self.join_topic = join_topic
            self.join_truth = {"topic": join_topic, **gen.join_truth().as_dict()}
            dataset["join"] = {**self.join_truth, "spec": join.as_dict()}
        return dataset

    # ------------------------------------------------------------------ drain runs

    def drain(
        self,
        name: str,
        quix_python: str | None,
        cluster_cores: int | None = None,
        backlog: Backlog | None = None,
    ) -> dict[str, Any]:
        """Drain the backlog (by default the main one) with one run kind, in its own process,
        and measure it; with `cluster_cores`, on `opts.master` with that many executor cores
        of one core each."""
        backlog = backlog or self.backlog
        assert backlog is not None, "load a backlog first"
        kind = {
            "raw": "raw",
            "raw_ingest": "raw",
            "raw_join": "raw",
            "quix": "quix",
            "ch_final": "ch_final",
        }.get(name, "streamsift")
        if kind == "quix" and quix_python is None:
            return {"ok": False, "exact": False, "error": self.results.get("quix_unavailable")}
        join = None
        extra: dict[str, Any] = {"truth": backlog.truth, "truth_path": str(backlog.truth_path)}
        if name in ("dedup-join", "raw_join"):
            o = self.opts
            join = {
                "topic": self.join_topic,
                "left_window": o.join_left_window,
                "right_window": o.join_right_window,
            }
            extra["truth"] = {**backlog.truth, "join": self.join_truth}
        if cluster_cores is not None:
            extra["master"] = self.opts.master
            extra["spark_conf"] = {
                **self.opts.spark_conf,
                "spark.cores.max": str(cluster_cores),
                "spark.executor.cores": "1",
            }
        label = name if cluster_cores is None else f"{name}-{cluster_cores}-cores"
        if backlog is not self.backlog:
            label = f"{label}-{backlog.truth['produced']}"
        run = self._new_run(
            f"drain-{label}",
            kind=kind,
            topic=backlog.topic,
            dedup=name not in ("ingest", "raw_ingest"),
            join=join,
            mode="drain",
            # At least 4 micro-batches, so the first one (which pays for starting Spark's
            # Python workers) can be told apart from the steady rate of the others.
            max_rows_per_batch=backlog.batch_rows,
            **extra,
        )
        self.log(f"drain: {label} ...")
        result = self._execute(run, quix_python, backlog.truth["produced"])
        result["rates"] = drain_rates(kind, result)
        if result.get("exact"):
            what = "left events/s" if join else "events/s"
            self.log(
                f"drain: {name}: exact, {result['rates']['processing_rate']:,.0f} {what} "
                f"processing, {result['rates']['wall_rate']:,.0f} {what} wall"
            )
        else:
            self.log(f"drain: {name}: FAILED ({result.get('error') or 'counts do not match'})")
        return result

    def _new_run(self, name: str, **spec: Any) -> Run:
        d = self.work / name
        d.mkdir(parents=True)
        (d / "data").mkdir()
        run = Run(name, d, {})
        run.spec = {
            "name": f"{name}-{self.run_id}",
            "consumer_group": f"bench-{name}-{self.run_id}",
            "bootstrap_servers": self.bootstrap,
            "partitions": self.opts.partitions,
            "window": self.opts.window,
            "max_rows_per_batch": self.opts.max_rows_per_batch,
            "max_delay": self.opts.max_delay,
            "state_store": self.opts.state_store,
            "spark_conf": self.opts.spark_conf,
            "truth": getattr(self, "truth", None),
            "truth_path": str(getattr(self, "truth_path", "")),
            "work_dir": str(d / "data"),
            "result_path": str(run.result_path),
            "progress_path": str(run.progress_path),
            "latency_path": str(d / "latency.parquet"),
            "clickhouse": self.opts.clickhouse,
            **spec,
        }
        return run

    def _start(self, run: Run, quix_python: str | None = None) -> subprocess.Popen:
        spec_path = run.dir / "spec.json"
        spec_path.write_text(json.dumps(run.spec, indent=2))
        if run.spec["kind"] == "quix":
            cmd = [quix_python or "", "-m", "streamsift_bench.quix_worker", str(spec_path)]
        else:
            cmd = [sys.executable, "-m", "streamsift_bench.isolated_run", str(spec_path)]
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        profiled = self.profiler is not None and run.spec["kind"] == "streamsift"
        if profiled:
            env.update(self.profiler.java_env(run.name))
        proc = processes.start(cmd, run.log_path, env=env)
        if profiled:
            self.profiler.attach(run.name, proc.pid)
        return proc

    def _profile_of(self, run: Run) -> str | None:
        """Summarise a profiled run's recordings (after it exited); the summary's path."""
        if self.profiler is None or run.spec["kind"] != "streamsift":
            return None
        return str(self.profiler.finish(run.name).relative_to(self.out))

    def _finish(self, run: Run, proc: subprocess.Popen, timeout: float) -> int:
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.log(f"{run.name}: no result within {timeout:.0f}s; killing it")
            processes.kill_tree(proc)
            code = -9
        return code

    def _execute(self, run: Run, quix_python: str | None, events: int) -> dict[str, Any]:
        broker_cpu = process_cpu(self.broker_pid)
        proc = self._start(run, quix_python)
        sampler = TreeSampler(proc.pid).start()
        timeout = 300 + events / 500
        try:
            code = self._finish(run, proc, timeout)
        except BaseException:  # Ctrl-C / SIGTERM: take the worker (and its JVM) down too
            processes.kill_tree(proc)
            raise
        resources = sampler.stop()
        result = self._result(run, code)
        result["profile"] = self._profile_of(run)
        result["resources"] = resources
        result["resources"]["broker_cpu_seconds"] = round(
            process_cpu(self.broker_pid) - broker_cpu,
            2,
        )
        # per million events; for the join, per million left events (the rate's unit)
        read = result.get("left_events") or result.get("read") or 0
        busy_cpu = sampler.cpu_between(result.get("processing_started_at"), result.get("done_at"))
        if read:
            result["resources"]["cpu_seconds_per_million"] = round(
                resources["cpu_seconds"] / read * 1e6, 1
            )
        if read and busy_cpu is not None:
            result["resources"]["processing_cpu_seconds"] = round(busy_cpu, 2)
            result["resources"]["processing_cpu_seconds_per_million"] = round(
                busy_cpu / read * 1e6, 1
            )
        result["resources"]["rss_series"] = [(round(t, 2), r) for t, r, _c in sampler.samples[::4]]
        return result

    def _result(self, run: Run, code: int) -> dict[str, Any]:
        try:
            result = json.loads(run.result_path.read_text())
        except (OSError, json.JSONDecodeError):
            tail = run.log_path.read_text(errors="replace")[-1500:] if run.log_path.exists() else ""
            result = {"ok": False, "exact": False, "error": f"worker exited {code}: {tail}"}
        result["log"] = str(run.log_path.relative_to(self.out))
        return result

    # ------------------------------------------------------------------ live runs

    def _live(self, scenario: str) -> dict[str, Any]:
        opts = self.opts
        topic = self.topic_name(f"live-{scenario}")
        create_topic(self.bootstrap, topic, opts.partitions, TOPIC_CONFIG)
        gen = LoadGenerator(
            self.load_spec(seed=opts.seed + 1),
            self.bootstrap,
            topic,
            linger_ms=opts.soak_linger_ms if scenario == "soak" else None,
        )
        truth_path = self.work / f"live-{scenario}-truth.json"
        run = self._new_run(
            f"live-{scenario}",
            kind="streamsift",
            topic=topic,
            dedup=scenario in ("dedup", "soak"),
            mode="live",
            truth=None,
            truth_path=str(truth_path),
            window=opts.soak_window if scenario == "soak" else opts.window,
        )
        produced: list[tuple[float, int]] = []  # (time, acked so far)
        total = 0

        def send(n: int | list, rate: float | None) -> dict[str, Any]:
            nonlocal total
            report = gen.send(n, rate)
            for t, _sent, acked in report.samples:
                produced.append((t, total + acked))
            total += report.acked
            return report.as_dict()

        self.log(f"live: {scenario}: starting the pipeline")
        send(WARMUP_EVENTS, None)
        proc = self._start(run)
        sampler = TreeSampler(proc.pid).start()
        position = Position(run.progress_path)
        steps: list[dict[str, Any]] = []
        error = None
        try:
            if not self._wait_read(position, proc, total, timeout=240):
                error = "the pipeline did not process the warm-up events within 240 s"
            else:
                if scenario == "soak":
                    plan = [("soak", opts.soak_rate, opts.soak_seconds)]
                else:
                    plan = [("latency", r, opts.step_seconds) for r in opts.latency_rates]
                    plan += [("ramp", r, opts.step_seconds) for r in opts.ramp_rates]
                steps = self._steps(
                    position, proc, sampler, gen, plan, send, produced, lambda: total
                )
        finally:
            gen.close()
            gen.write_truth(truth_path)
            if error is None:
                backlog = total - position.processed
                self._wait_read(position, proc, total, timeout=120 + backlog / 2_000)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            code = self._finish(run, proc, timeout=180)
            resources = sampler.stop()
        result = self._result(run, code)
        result["profile"] = self._profile_of(run)
        if error:
            result.update(ok=False, exact=False, error=error)
        result["resources"] = resources
        result["resources"]["rss_series"] = [(round(t, 2), r) for t, r, _c in sampler.samples[::4]]
        if scenario == "soak" and steps:
            result["memory"] = memory_flatness(sampler.samples, steps[0], sampler.role_samples)
            result["memory"]["distinct_keys"] = result.get("rows")
            result["memory"]["seconds"] = round(steps[0]["ended_at"] - steps[0]["started_at"], 1)
            result["memory"]["window"] = opts.soak_window
        result["steps"] = steps
        result["produced"] = total
        result["series"] = {"produced": produced, "processed": position.series()}
        if result.get("exact") and Path(run.spec["latency_path"]).exists():
            attach_latency(result, Path(run.spec["latency_path"]))
        attach_batch_phases(steps, result.get("batch_log") or [])
        result["sustained_rate"] = sustained_rate(steps) if result.get("exact") else None
        result["ramp_limited_by"] = ramp_limit(steps)
        verdict = "exact" if result.get("exact") else f"FAILED ({result.get('error') or 'counts'})"
        self.log(f"live: {scenario}: {verdict}; sustained {result['sustained_rate']}")
        return result

    @staticmethod
    def _wait_read(position: Position, proc: subprocess.Popen, target: int, timeout: float) -> bool:
        """Wait until the pipeline has processed `target` messages (False: timeout or exit)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if position.processed >= target:
                return True
            time.sleep(0.25)
        return False

    def _steps(
        self,
        position: Position,
        proc: subprocess.Popen,
        sampler: TreeSampler,
        gen: LoadGenerator,
        plan: list[tuple[str, int, float]],
        send: Callable[[Any, float | None], dict[str, Any]],
        produced: list[tuple[float, int]],
        total: Callable[[], int],
    ) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        for phase, rate, seconds in plan:
            if proc.poll() is not None:
                break
            n = max(1, int(rate * seconds))
            # Serialise before the clock starts, unless that would not fit in memory (a long
            # soak): then events are made while sending, which the achieved rate will show.
            todo = gen.prepare(n) if n * self.opts.payload_bytes <= PREPARE_MAX_BYTES else n
            self.log(f"live: {phase} step at {rate:,} events/s for {seconds:.0f}s")
            cpu_before = CpuParties.now(sampler, self.broker_pid)
            report = send(todo, rate)
            cores = cpu_before.cores_until(CpuParties.now(sampler, self.broker_pid))
            del todo
            drained = self._wait_read(position, proc, total(), timeout=DRAIN_GRACE_S)
            drained_at = time.time()
            if not drained:  # let it catch up before the next step (or before stopping)
                self._wait_read(position, proc, total(), timeout=max(60.0, n / 2000))
            step = judge_step(phase, rate, report, produced, position.series(), drained, drained_at)
            step["cores"] = cores
            steps.append(step)
            self.log(
                f"live: {phase} {rate:,}/s: achieved {step['achieved_rps']:,.0f}/s, "
                f"max lag {step['max_lag']:,} ({step['max_lag_seconds']:.1f}s of input), "
                f"{'sustained' if step['sustained'] else 'NOT sustained'}; cores busy: "
                + ", ".join(f"{k} {v:.2f}" for k, v in cores.items())
            )
            if phase == "ramp" and not step["sustained"]:
                break
        return steps


class Position:
    """How many messages a live pipeline has finished, from its worker's progress file.

    The worker writes, about once a second, the end offsets of its last finished micro-batch
    (summed over partitions, from where the query began): a micro-batch is finished when its
    rows are in ClickHouse and Spark has committed it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def series(self) -> list[tuple[float, int]]:
        return [(p["t"], p["position"]) for p in read_progress(self.path) if "position" in p]

    @property
    def processed(self) -> int:
        points = self.series()
        return points[-1][1] if points else 0
