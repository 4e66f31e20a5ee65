"""Memory and CPU of a benchmark run's process tree, sampled from the outside with psutil.

A run is one worker process plus what it starts: for streamsift the Python driver, the
Spark JVM and Spark's Python workers. RSS is summed over the tree at each sample (pages
shared between forked Python workers count once per process, so the sum leans high), and
the peak of that sum is reported with the peak of each role; PSS (shared pages split among
their sharers, so the sum is what the tree really holds) is sampled less often. CPU seconds are each process's
user + system time as last seen, summed, and never less than what the kernel accounts to
reaped children (a process that lives shorter than one sample interval is otherwise missed).
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil


def role_of(proc: psutil.Process, root_pid: int) -> str:
    if proc.pid == root_pid:
        return "driver"
    try:
        name = proc.name()
        cmd = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "other"
    if name == "java" or "/java" in cmd.split(" ", 1)[0]:
        return "jvm"
    if "streamsift.embedded.clickhouse_server" in cmd:  # --clickhouse server: the endpoint
        return "clickhouse"
    if "pyspark" in cmd or "python" in name:
        return "python_workers"
    return "other"


@dataclass
class TreeSampler:
    """Samples a process tree every `interval` seconds in a background thread."""

    pid: int
    interval: float = 0.25
    samples: list[tuple[float, int, float]] = field(default_factory=list)  # (time, rss, cpu s)
    peak_rss: int = 0
    peak_by_role: dict[str, int] = field(default_factory=dict)
    # (time, RSS by role), on the PSS samples only: which process grows in a long run
    role_samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    peak_pss: int = 0
    pss_every: int = 8  # PSS costs ~10 ms a process (smaps_rollup): every 8th sample only
    _cpu: dict[int, float] = field(default_factory=dict)
    _roles: dict[int, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _rusage_start: float = 0.0

    def start(self) -> TreeSampler:
        self._rusage_start = _children_cpu()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        total = 0
        pss = 0
        with_pss = len(self.samples) % self.pss_every == 0
        by_role: dict[str, int] = {}
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                # not cached: spark-submit starts as a shell script and execs the JVM
                role = self._roles[proc.pid] = role_of(proc, self.pid)
                rss = proc.memory_info().rss
                if with_pss:
                    pss += proc.memory_full_info().pss
                times = proc.cpu_times()
                self._cpu[proc.pid] = times.user + times.system
                total += rss
                by_role[role] = by_role.get(role, 0) + rss
        now = time.time()
        self.samples.append((now, total, sum(self._cpu.values())))
        if with_pss:
            self.role_samples.append((now, by_role))
        self.peak_rss = max(self.peak_rss, total)
        self.peak_pss = max(self.peak_pss, pss)
        for role, rss in by_role.items():
            self.peak_by_role[role] = max(self.peak_by_role.get(role, 0), rss)

    def cpu_between(self, start: float | None, end: float | None) -> float | None:
        """CPU seconds the tree used between two wall-clock times (from the samples)."""
        if start is None or end is None or len(self.samples) < 2 or end <= start:
            return None

        def at(t: float) -> float:
            before = [c for ts, _rss, c in self.samples if ts <= t]
            return before[-1] if before else self.samples[0][2]

        return max(0.0, at(end) - at(start))

    def stop(self) -> dict[str, Any]:
        """Stop sampling (call after the worker was waited for) and summarise."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        sampled = sum(self._cpu.values())
        reaped = _children_cpu() - self._rusage_start
        return {
            "peak_rss_mb": round(self.peak_rss / 2**20, 1),
            "peak_rss_mb_by_role": {k: round(v / 2**20, 1) for k, v in self.peak_by_role.items()},
            "peak_pss_mb": round(self.peak_pss / 2**20, 1),
            "cpu_seconds": round(max(sampled, reaped), 2),
            "cpu_seconds_by_role": self._cpu_by_role(),
            "processes_seen": len(self._roles),
        }

    def _cpu_by_role(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, cpu in self._cpu.items():
            role = self._roles.get(pid, "other")
            out[role] = round(out.get(role, 0.0) + cpu, 2)
        return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int | None) -> float:
    """CPU seconds a (running) process has used so far; 0 when it is gone or unknown."""
    if pid is None:
        return 0.0
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.user + times.system


PARTIES = ("pipeline", "broker", "generator", "machine")  # CpuParties' counters, in report order


@dataclass(frozen=True)
class CpuParties:
    """CPU seconds used so far by each party of a live run, and busy seconds of the machine.

    A live step shares 2 cores among the pipeline, the broker and the load generator (the
    bench's own process); their cores over a step tell a pipeline that is too slow apart from a
    machine that is full.
    """

    at: float
    pipeline: float
    broker: float
    generator: float
    machine: float

    @classmethod
    def now(cls, pipeline: TreeSampler, broker_pid: int | None) -> CpuParties:
        machine = psutil.cpu_times()
        busy = sum(getattr(machine, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq"))
        return cls(
            at=time.time(),
            pipeline=pipeline.samples[-1][2] if pipeline.samples else 0.0,
            broker=process_cpu(broker_pid),
            generator=process_cpu(os.getpid()),
            machine=busy,
        )

    def cores_until(self, later: CpuParties) -> dict[str, float]:
        """Cores each party kept busy on average from this snapshot to `later`."""
        span = later.at - self.at
        if span <= 0:
            return {}
        return {n: round((getattr(later, n) - getattr(self, n)) / span, 2) for n in PARTIES}
