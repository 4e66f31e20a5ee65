"""A kill -9 in the middle of Spark's first offset-log write must not make a pipeline
unable to start again (seen in the kill -9 harness: STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY)."""

from __future__ import annotations

import pytest

from streamsift.engine.checkpoint import clear_interrupted_writes, has_batches
from streamsift.engine.runner import PipelineRunner
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce

pytestmark = pytest.mark.integration

LEFTOVERS = (
    ".0.6dab4c6a-2583-4482-a48b-21652c809bea.tmp",
    "..0.6dab4c6a-2583-4482-a48b-21652c809bea.tmp.crc",
)


def test_a_first_offset_write_cut_short_does_not_block_the_restart(
    broker, event_pipeline, unique_name, tmp_path
):
    broker.create_topic(unique_name, 2)
    truth = Truth()
    produce(
        broker.bootstrap_servers, unique_name, generate(EventSpec(600, 0.25, 100, seed=3), truth)
    )
    pipeline = event_pipeline()
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    # what a kill -9 during Spark's write of offsets/0 leaves: the temporary file, no entry
    offsets = runner.checkpoint / "spark" / "offsets"
    offsets.mkdir(parents=True)
    for name in LEFTOVERS:
        (offsets / name).write_bytes(b"")
    result = runner.run(until_caught_up=True)
    assert sorted(p.name for p in offsets.iterdir() if p.name.startswith(".")) == [
        f".{p.name}.crc" for p in offsets.iterdir() if p.name.isdigit()
    ]
    rows = runner.writer.query_rows(
        f"SELECT count(), uniqExact(event_id) FROM {pipeline.sink.table}"
    )
    assert rows[0] == (len(truth.first_versions), len(truth.first_versions))
    assert result.stats["written"] == len(truth.first_versions)


def test_only_the_leftovers_of_cut_writes_are_removed(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    kept = ["0", ".0.crc", "1", ".1.crc"]
    for name in [*kept, *LEFTOVERS]:
        (offsets / name).write_text("x")
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / ".1.f00.tmp").write_text("")
    removed = clear_interrupted_writes(tmp_path)
    assert sorted(p.name for p in removed) == sorted([*LEFTOVERS, ".1.f00.tmp"])
    assert sorted(p.name for p in offsets.iterdir()) == sorted(kept)
    assert has_batches(tmp_path)
    assert not has_batches(tmp_path / "nowhere")
