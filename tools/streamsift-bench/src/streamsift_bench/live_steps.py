"""The steps of a live bench run: fixed-rate sends while the pipeline runs, each judged on
the lag it left, and how far the pipeline has got (from its worker's progress file)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamsift_bench.common import DRAIN_GRACE_S, read_progress
from streamsift_bench.loadgen import LoadGenerator
from streamsift_bench.measures import judge_step
from streamsift_bench.resources import CpuParties, TreeSampler

PREPARE_MAX_BYTES = 1 << 30


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


def wait_read(position: Position, proc: subprocess.Popen, target: int, timeout: float) -> bool:
    """Wait until the pipeline has processed `target` messages (False: timeout or exit)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if position.processed >= target:
            return True
        time.sleep(0.25)
    return False


def run_steps(
    position: Position,
    proc: subprocess.Popen,
    sampler: TreeSampler,
    gen: LoadGenerator,
    plan: list[tuple[str, int, float]],
    send: Callable[[Any, float | None], dict[str, Any]],
    produced: list[tuple[float, int]],
    total: Callable[[], int],
    *,
    payload_bytes: int,
    broker_pid: int | None,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Send each planned step at its rate while the pipeline runs, and judge it: did the
    pipeline keep up (bounded lag, drained after the step)? A ramp stops at its first step
    that was not sustained."""
    steps: list[dict[str, Any]] = []
    for phase, rate, seconds in plan:
        if proc.poll() is not None:
            break
        n = max(1, int(rate * seconds))
        # Serialise before the clock starts, unless that would not fit in memory (a long
        # soak): then events are made while sending, which the achieved rate will show.
        todo = gen.prepare(n) if n * payload_bytes <= PREPARE_MAX_BYTES else n
        log(f"live: {phase} step at {rate:,} events/s for {seconds:.0f}s")
        cpu_before = CpuParties.now(sampler, broker_pid)
        report = send(todo, rate)
        cores = cpu_before.cores_until(CpuParties.now(sampler, broker_pid))
        del todo
        drained = wait_read(position, proc, total(), timeout=DRAIN_GRACE_S)
        drained_at = time.time()
        if not drained:  # let it catch up before the next step (or before stopping)
            wait_read(position, proc, total(), timeout=max(60.0, n / 2000))
        step = judge_step(phase, rate, report, produced, position.series(), drained, drained_at)
        step["cores"] = cores
        steps.append(step)
        log(
            f"live: {phase} {rate:,}/s: achieved {step['achieved_rps']:,.0f}/s, "
            f"max lag {step['max_lag']:,} ({step['max_lag_seconds']:.1f}s of input), "
            f"{'sustained' if step['sustained'] else 'NOT sustained'}; cores busy: "
            + ", ".join(f"{k} {v:.2f}" for k, v in cores.items())
        )
        if phase == "ramp" and not step["sustained"]:
            break
    return steps
