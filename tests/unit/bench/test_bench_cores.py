"""The live bench's account of who keeps the cores busy during a step."""

from __future__ import annotations

import os
import time

from streamsift_bench.resources import CpuParties, TreeSampler


def test_cores_are_cpu_seconds_per_second_of_the_step():
    before = CpuParties(at=100.0, pipeline=10.0, broker=2.0, generator=5.0, machine=40.0)
    after = CpuParties(at=110.0, pipeline=22.0, broker=5.0, generator=9.0, machine=59.5)
    assert before.cores_until(after) == {
        "pipeline": 1.2,
        "broker": 0.3,
        "generator": 0.4,
        "machine": 1.95,
    }
    assert after.cores_until(before) == {}  # no span: nothing to say


def test_a_busy_process_shows_as_about_one_core():
    """Real counters: this process spins for 0.3 CPU-s, so it kept up to a core busy (less
    when other processes share the cores), its tree (which holds whatever else this test
    process started) and the machine at least as much; nothing goes past the machine's cores."""
    cores_here = os.cpu_count() or 1
    sampler = TreeSampler(os.getpid())
    sampler.sample()
    before = CpuParties.now(sampler, broker_pid=None)
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    sampler.sample()
    cores = before.cores_until(CpuParties.now(sampler, broker_pid=None))
    assert cores["broker"] == 0.0
    for party in ("generator", "pipeline", "machine"):
        assert 0.2 <= cores[party] <= cores_here + 0.2, (party, cores)
