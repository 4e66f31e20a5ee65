"""Exactly-once under crashes and ClickHouse faults, embedded and in server mode.

Crashes are real: the pipeline runs as a `streamsift run` subprocess and is SIGKILLed by the
fault-injection variable right after the K-th insert of a batch, before Spark commits it.
ClickHouse server mode runs against the chdb-backed HTTP endpoint in its own process.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.embedded.clickhouse_faults import set_remote_faults
from streamsift.engine.runner import PipelineRunner
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce
from streamsift.sample_data.schema import EVENT_MAPPING
from support.cli import run_until_caught_up
from support.clickhouse import Endpoint, assert_each_event_once
from support.pipeline_docs import event_doc
from support.waiting import wait_for

pytestmark = pytest.mark.integration


def pipeline_doc(
    broker, topic: str, table: str, sink: dict, checkpoint: Path, **sink_extra
) -> dict:
    """The generator's events, deduplicated, in batches small enough for a crash mid-run."""
    return event_doc(
        bootstrap_servers=broker.bootstrap_servers,
        topic=topic,
        table=table,
        clickhouse=sink,
        checkpoint_dir=checkpoint,
        sink={"max_batch_size": 500, **sink_extra},
        runtime={"max_rows_per_batch": 3_000},
    )


@pytest.fixture
def endpoint(tmp_path):
    ep = Endpoint(tmp_path / "server-data")
    yield ep
    ep.stop()


@pytest.mark.parametrize("mode", ["embedded", "server"])
def test_kill_after_an_insert_then_restart_inserts_nothing_twice(
    broker, tmp_path, unique_name, mode
):
    broker.create_topic(unique_name, 3)
    truth = Truth()
    produce(
        broker.bootstrap_servers, unique_name, generate(EventSpec(8_000, 0.25, 500, seed=21), truth)
    )
    data_dir = tmp_path / "chdb"
    ep = None
    if mode == "server":
        ep = Endpoint(data_dir)
        sink = {"host": "127.0.0.1", "port": ep.port}
    else:
        sink = {"path": str(data_dir)}
    doc = pipeline_doc(broker, unique_name, unique_name, sink, tmp_path / "ckpt")
    temp = tmp_path / "temp"  # the runs' temp directory, to see what a kill leaves there
    temp.mkdir()
    try:
        crashed = run_until_caught_up(
            doc, tmp_path, env={"STREAMSIFT_FAULT": "kill_after_insert:3", "TMPDIR": str(temp)}
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
        # The killed driver's scratch directory stays behind (the JVM, left alone, deleted
        # its own files in it) ...
        (scratch_root,) = temp.glob("streamsift-spark-*")
        (left,) = scratch_root.iterdir()
        assert sorted(p.name for p in temp.iterdir()) == [scratch_root.name]
        if ep is None:
            ep = Endpoint(data_dir)  # look at the embedded data through the endpoint
        partial = ep.count(unique_name)
        assert 0 < partial < truth.expected_unique  # the crash happened mid-run
        if mode == "embedded":
            ep.stop()
        resumed = run_until_caught_up(doc, tmp_path, env={"TMPDIR": str(temp)})
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        # ... until the next run removed it; that run's own holds no file once it ended
        assert not left.exists()
        (own,) = scratch_root.iterdir()
        assert [p for p in own.rglob("*") if not p.is_dir()] == []
        if mode == "embedded":
            ep = Endpoint(data_dir)
        assert_each_event_once(ep.port, unique_name, truth.expected_unique)
    finally:
        if ep is not None:
            ep.stop()


def test_existing_table_without_dedup_window_is_fixed_or_refused(
    broker, tmp_path, unique_name, endpoint
):
    """Plain MergeTree ignores tokens unless non_replicated_deduplication_window > 0."""
    broker.create_topic(unique_name, 3)
    truth = Truth()
    produce(
        broker.bootstrap_servers, unique_name, generate(EventSpec(4_000, 0.2, 300, seed=22), truth)
    )
    columns = ", ".join(f"`{m['column']}` {m['type']}" for m in EVENT_MAPPING)
    endpoint.client.command(
        f"CREATE TABLE {unique_name} ({columns}) ENGINE = MergeTree ORDER BY event_id"
    )
    sink = {"host": "127.0.0.1", "port": endpoint.port}

    refuse = pipeline_doc(
        broker,
        unique_name,
        unique_name,
        sink,
        tmp_path / "ckpt",
        create_table=False,
        on_missing_dedup_window="refuse",
    )
    refused = run_until_caught_up(refuse, tmp_path)
    assert refused.returncode == 1
    assert "non_replicated_deduplication_window" in refused.stderr
    assert f"ALTER TABLE `default`.`{unique_name}` MODIFY SETTING" in refused.stderr
    assert endpoint.count(unique_name) == 0

    fix = pipeline_doc(
        broker, unique_name, unique_name, sink, tmp_path / "ckpt", create_table=False
    )
    crashed = run_until_caught_up(fix, tmp_path, env={"STREAMSIFT_FAULT": "kill_after_insert:2"})
    assert crashed.returncode == -signal.SIGKILL
    assert "non_replicated_deduplication_window" in str(
        endpoint.client.command(f"SHOW CREATE TABLE {unique_name}")
    )
    resumed = run_until_caught_up(fix, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_each_event_once(endpoint.port, unique_name, truth.expected_unique)


FAULTS = {
    "503s": {"fail_next": 4, "status": 503},
    "dropped-connections": {"fail_next": 4, "status": 0},
    "response-lost-after-commit": {"fail_next": 3, "status": 0, "after_execute": 1},
    "slow": {"delay_ms": 400},
}


def events_into_endpoint(
    broker, topic: str, endpoint: Endpoint, tmp_path: Path, events: int, seed: int
) -> tuple[Pipeline, Truth]:
    """`events` generated events (20% re-sends) on a new topic, and the pipeline that
    deduplicates them into the endpoint's table of that name."""
    broker.create_topic(topic, 3)
    truth = Truth()
    produce(broker.bootstrap_servers, topic, generate(EventSpec(events, 0.2, 300, seed), truth))
    sink = {"host": "127.0.0.1", "port": endpoint.port}
    return parse_pipeline(pipeline_doc(broker, topic, topic, sink, tmp_path / "ckpt")), truth


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_clickhouse_failures_are_retried_until_it_recovers(
    broker, tmp_path, unique_name, endpoint, fault
):
    pipeline, truth = events_into_endpoint(broker, unique_name, endpoint, tmp_path, 3_000, 23)
    runner = PipelineRunner(pipeline)
    runner.prepare_sink()
    set_remote_faults(endpoint.url, **FAULTS[fault])
    result = runner.run(until_caught_up=True)
    assert result.stats["written"] == truth.expected_unique
    assert_each_event_once(endpoint.port, unique_name, truth.expected_unique)
    # what streamsift retried is counted (the metric clickhouse_retries): at least one retry
    # and no more than the failures injected (clickhouse_connect retries a failed read-only
    # query itself before streamsift sees it; here the faults meet run()'s table checks first)
    retried = sum(result.stats["retries"].values())
    assert (
        1 <= retried <= FAULTS[fault]["fail_next"] if "fail_next" in FAULTS[fault] else not retried
    )


def test_insert_retries_are_counted_where_the_metrics_read_them(
    broker, tmp_path, unique_name, endpoint
):
    """ClickHouse answers 503 to two inserts in the middle of a batch (armed after its first
    chunk is in): the writer retries each, the rows land once, and the run counts exactly
    those two insert retries (what `streamsift_clickhouse_retries_total` shows)."""
    pipeline, truth = events_into_endpoint(broker, unique_name, endpoint, tmp_path, 2_000, 25)
    runner = PipelineRunner(pipeline, driver_inserts=True)  # the inserts happen in this process
    armed: list[bool] = []

    def fail_twice_after_the_first_insert() -> None:
        if not armed:
            armed.append(True)
            set_remote_faults(endpoint.url, fail_next=2, status=503)

    runner.batch_writer.after_insert = fail_twice_after_the_first_insert
    result = runner.run(until_caught_up=True)
    assert armed and result.stats["written"] == truth.expected_unique
    assert_each_event_once(endpoint.port, unique_name, truth.expected_unique)
    assert result.stats["retries"] == {"insert": 2}
    assert "insert" in runner.report()["stats"]["retries"]  # what status.json and /metrics get


def test_rows_clickhouse_refuses_go_to_the_dlq(broker, tmp_path, unique_name, endpoint):
    """A constraint the values violate: those rows go to the DLQ with the code and their
    original message (read back from Kafka on the executors that insert), the rest land."""
    broker.create_topic(unique_name, 3)
    truth = Truth()
    events = list(generate(EventSpec(2_000, 0.0, seed=24), truth))
    for e in events[::100]:
        e["amount"] = -1.0
    produce(broker.bootstrap_servers, unique_name, events)
    columns = ", ".join(f"`{m['column']}` {m['type']}" for m in EVENT_MAPPING)
    endpoint.client.command(
        f"CREATE TABLE {unique_name} ({columns}, CONSTRAINT positive CHECK amount >= 0) "
        "ENGINE = MergeTree ORDER BY event_id SETTINGS non_replicated_deduplication_window = 1000"
    )
    pipeline = parse_pipeline(
        pipeline_doc(
            broker,
            unique_name,
            unique_name,
            {"host": "127.0.0.1", "port": endpoint.port},
            tmp_path / "ckpt",
            create_table=False,
        )
    )
    result = PipelineRunner(pipeline).run(until_caught_up=True)
    assert endpoint.count(unique_name) == 1_980
    assert result.stats["written"] == 1_980 and result.stats["dlq"] == 20
    dlq = endpoint.client.query(
        f"SELECT stage, error_class, error, key, payload FROM {unique_name}_dlq"
    ).result_rows
    assert len(dlq) == 20
    assert {(s, c) for s, c, *_ in dlq} == {("sink", "clickhouse_469")}
    assert all("positive" in err for _, _, err, *_ in dlq)
    # each holds its message byte for byte, as produced (key: the event id)
    sent = {e["event_id"]: json.dumps(e) for e in events[::100]}
    assert {key: payload for *_, key, payload in dlq} == sent


def _safe_count(ep: Endpoint, table: str) -> int:
    try:
        return ep.count(table)
    except Exception:  # noqa: BLE001 - the endpoint may be down on purpose
        return -1


def test_clickhouse_down_mid_run_then_back_catches_up_exactly(broker, tmp_path, unique_name):
    """Kill the ClickHouse endpoint while the pipeline runs, bring it back on the same port."""
    import threading

    broker.create_topic(unique_name, 3)
    truth = Truth()
    events = list(generate(EventSpec(6_000, 0.2, 400, seed=25), truth))
    produce(broker.bootstrap_servers, unique_name, events[:3_000])
    expected_first = len({e["event_id"] for e in events[:3_000]})
    ep = Endpoint(tmp_path / "server")
    port = ep.port
    doc = pipeline_doc(
        broker, unique_name, unique_name, {"host": "127.0.0.1", "port": port}, tmp_path / "ckpt"
    )
    doc["sink"]["max_delay_time"] = "500ms"
    runner = PipelineRunner(parse_pipeline(doc))
    errors: list[BaseException] = []

    def run() -> None:
        try:
            runner.run(until_caught_up=False)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: _safe_count(ep, unique_name) == expected_first, 180, what="the first wave")
        ep.kill()
        produce(broker.bootstrap_servers, unique_name, events[3_000:])
        import time

        # the executors' inserts fail and back off meanwhile; the driver shows it
        wait_for(
            lambda: "does not answer" in (runner.stats.status or ""), 60, what="an outage status"
        )
        time.sleep(3)
        assert not errors, errors
        ep = Endpoint(tmp_path / "server", port)
        wait_for(
            lambda: _safe_count(ep, unique_name) == truth.expected_unique,
            240,
            what="catch-up after recovery",
        )
        wait_for(lambda: runner.stats.status is None, 30, what="the status cleared after recovery")
        runner.stop()
        thread.join(120)
        assert not errors, errors
        assert_each_event_once(ep.port, unique_name, truth.expected_unique)
    finally:
        runner.stop()
        ep.stop()


def test_clickhouse_down_at_start_is_waited_for_and_shown(broker, tmp_path, unique_name):
    import threading
    import time

    broker.create_topic(unique_name, 3)
    truth = Truth()
    produce(
        broker.bootstrap_servers, unique_name, generate(EventSpec(2_000, 0.2, 200, seed=26), truth)
    )
    ep = Endpoint(tmp_path / "server")
    port = ep.port
    ep.kill()
    doc = pipeline_doc(
        broker, unique_name, unique_name, {"host": "127.0.0.1", "port": port}, tmp_path / "ckpt"
    )
    runner = PipelineRunner(parse_pipeline(doc))
    result: list = []
    thread = threading.Thread(
        target=lambda: result.append(runner.run(until_caught_up=True)), daemon=True
    )
    thread.start()
    wait_for(lambda: runner.stats.status is not None, 60, what="a retry status")
    assert "retrying" in runner.stats.status
    time.sleep(2)
    ep = Endpoint(tmp_path / "server", port)
    try:
        thread.join(240)
        assert result and result[0].stats["written"] == truth.expected_unique
        assert runner.stats.status is None  # cleared once ClickHouse answered again
        assert_each_event_once(ep.port, unique_name, truth.expected_unique)
    finally:
        ep.stop()
