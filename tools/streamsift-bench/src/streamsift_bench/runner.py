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
   stepped ramp that stops at the first rate whose lag does not stay bounded (live_steps.py);
4. checks every run against the truth (a mismatch fails the run: it gets no numbers), and
   writes results.json with the verdicts, report.md and PNG plots (report.py).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamsift.embedded.broker import Broker, create_topic
from streamsift.spark_host import processes
from streamsift_bench.common import TOPIC_CONFIG
from streamsift_bench.large_drain import Backlog, large_drain
from streamsift_bench.live_steps import Position, run_steps, wait_read
from streamsift_bench.loadgen import JoinLoadSpec, LoadGenerator, LoadSpec
from streamsift_bench.measures import (
    attach_batch_phases,
    attach_latency,
    combine_rounds,
    drain_rates,
    load_average,
    machine_info,
    memory_flatness,
    ramp_limit,
    sustained_rate,
)
from streamsift_bench.options import (
    BASELINE_KINDS,
    CLUSTER_RUNS,
    LIVE_SCENARIOS,
    SERVER_BASELINES,
    BenchOptions,
)
from streamsift_bench.profiles import Profiler
from streamsift_bench.resources import TreeSampler, process_cpu

WARMUP_EVENTS = 2_000

Log = Callable[[str], None]


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
            if opts.master:
                for label, cores in CLUSTER_RUNS.items():
                    self.results["drain"][label] = self.drain("dedup", None, cores)
                return self._done(started)
            plan = [(b, b) for b in opts.baselines if self._runs_with(b, opts)]
            self.drain_rounds(plan + [(s, s) for s in opts.scenarios], quix_python)
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

    @staticmethod
    def _runs_with(baseline: str, opts: BenchOptions) -> bool:
        """A baseline runs beside the scenario it is a reference for (raw_vec_server: the
        dedup scenario in server mode, where it writes to the same endpoint)."""
        scenarios = opts.scenarios
        if baseline in SERVER_BASELINES:
            return opts.clickhouse == "server" and "dedup" in scenarios
        if baseline.endswith("_ingest"):
            return "ingest" in scenarios
        if baseline == "raw_join":
            return "dedup-join" in scenarios
        return bool(scenarios)

    def drain_rounds(
        self,
        runs: list[tuple[str, str]],
        quix_python: str | None,
        backlog: Backlog | None = None,
    ) -> None:
        """Drain with each (result name, run name) of `runs`, `opts.pairs` rounds in turn
        (A B A B: each pair of runs alternates), and record each run with its rounds
        (measures.combine_rounds)."""
        rounds = max(1, self.opts.pairs)
        done: dict[str, list[dict[str, Any]]] = {r: [] for r, _ in runs}
        for k in range(rounds):
            if rounds > 1:
                self.log(f"round {k + 1} of {rounds}")
            for result_name, name in runs:
                done[result_name].append(self.drain(name, quix_python, backlog=backlog, round_no=k))
        for result_name, results in done.items():
            self.results["drain"][result_name] = combine_rounds(results)

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
        round_no: int = 0,
    ) -> dict[str, Any]:
        """Drain the backlog (by default the main one) with one run kind, in its own process,
        and measure it; with `cluster_cores`, on `opts.master` with that many executor cores
        of one core each. `round_no` > 0: a repeat (its own work directory)."""
        backlog = backlog or self.backlog
        assert backlog is not None, "load a backlog first"
        kind = BASELINE_KINDS.get(name, "streamsift")
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
                "mode": o.join_mode,
            }
            extra["truth"] = {**backlog.truth, "join": self.join_truth}
        if kind != "streamsift":  # where a baseline writes (streamsift: --clickhouse)
            extra["clickhouse"] = "server" if name in SERVER_BASELINES else "embedded"
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
        if round_no:
            label = f"{label}-r{round_no + 1}"
        run = self._new_run(
            f"drain-{label}",
            kind=kind,
            topic=backlog.topic,
            dedup=name != "ingest" and not name.endswith("_ingest"),
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
            if not wait_read(position, proc, total, timeout=240):
                error = "the pipeline did not process the warm-up events within 240 s"
            else:
                if scenario == "soak":
                    plan = [("soak", opts.soak_rate, opts.soak_seconds)]
                else:
                    plan = [("latency", r, opts.step_seconds) for r in opts.latency_rates]
                    plan += [("ramp", r, opts.step_seconds) for r in opts.ramp_rates]
                steps = run_steps(
                    position,
                    proc,
                    sampler,
                    gen,
                    plan,
                    send,
                    produced,
                    lambda: total,
                    payload_bytes=opts.payload_bytes,
                    broker_pid=self.broker_pid,
                    log=self.log,
                )
        finally:
            gen.close()
            gen.write_truth(truth_path)
            if error is None:
                backlog = total - position.processed
                wait_read(position, proc, total, timeout=120 + backlog / 2_000)
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
