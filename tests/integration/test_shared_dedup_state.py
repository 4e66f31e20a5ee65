"""Dedup state on shared storage in a local run: a pipeline that ran with its state in the
checkpoint, resumed with `runtime.state_location`, carries its state over and lets no
duplicate through; and the shared state alone (no local cache left) decides as before."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from streamsift.engine.runner import PipelineRunner
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce
from streamsift.spark_host.session import spark_session
from streamsift.transforms.dedup.shared_state import SharedPartitionState, local_cache_root

pytestmark = pytest.mark.integration


def test_moving_a_local_pipeline_to_shared_state_lets_no_duplicate_through(
    broker, event_pipeline, tmp_path, unique_name
):
    broker.create_topic(unique_name, 2)
    truth = Truth()
    events = list(generate(EventSpec(3_000, 0.2, 300, seed=41), truth))
    first, second = events[:1_500], events[1_500:]
    # the second half also re-sends copies of first-half events (same id, same time)
    resent = [dict(e) for e in first[::5]]
    for e in resent:
        e["attempt"] = 9
    shared = tmp_path / "shared"

    def runner(location: str | None) -> PipelineRunner:
        # one micro-batch a run: what is tested is the state carried between runs
        runtime = {"checkpoint_dir": str(tmp_path / "ckpt"), "max_rows_per_batch": 2_000}
        if location:
            runtime["state_location"] = location
        return PipelineRunner(event_pipeline(runtime=runtime), base_dir=tmp_path)

    produce(broker.bootstrap_servers, unique_name, first)
    runner(None).run(until_caught_up=True)
    assert not shared.exists()

    produce(broker.bootstrap_servers, unique_name, second + resent)
    r = runner(str(shared))
    r.run(until_caught_up=True)
    assert r.writer.count(unique_name) == truth.expected_unique
    assert r.writer.count(unique_name, "attempt > 0") == 0
    logs, snaps = SharedPartitionState(str(shared), f"dedup/{unique_name}/p0").listing()
    assert snaps and logs  # carried over, then one changelog per range

    # no cache left (as on a new executor): the shared state alone must reject them again
    digest = local_cache_root(str(shared)).name
    # Spark's local dir of this process (its scratch directory, spark_host/scratch.py), where the
    # block manager's dirs are its Python workers' SPARK_LOCAL_DIRS
    local_dir = spark_session().sparkContext.getConf().get("spark.local.dir", tempfile.gettempdir())
    caches = list(Path(local_dir).glob(f"blockmgr-*/streamsift-dedup-cache/{digest}"))
    assert caches
    for cache in caches:
        shutil.rmtree(cache)
    produce(broker.bootstrap_servers, unique_name, resent)
    r = runner(str(shared))
    r.run(until_caught_up=True)
    assert r.writer.count(unique_name) == truth.expected_unique
    assert r.stats.as_dict()["duplicates"] == len(resent)
