"""DLQ tooling on the real broker, real Spark and real chdb: stats, show, consume, purge and
replay, with exact counts (table rows + pending + handled add up to what was produced), replay
interrupted and re-run, and the `streamsift dlq` command as a user runs it. (Replayed records
are both rows and dead letters: rows + pending + consumed = messages without duplicates.)

In-process tests share the session's chdb directory (one per process) and use unique table
names; CLI tests run `python -m streamsift.cli.main` with their own chdb directory.
"""

from __future__ import annotations

import json
import logging
import os
import pty
import random
import subprocess
import sys
import textwrap
import traceback
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from streamsift.cli.main import main
from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.engine.errors import PipelineFailed, ReplayConflict
from streamsift.engine.replay import Replayer
from streamsift.engine.runner import PipelineRunner
from streamsift.sinks.dlq_queries import DlqQueries
from streamsift.sources.errors import SourceError
from support import cli
from support.clickhouse import held_by_another_process
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration
T0 = datetime(2026, 2, 1, tzinfo=timezone.utc)
MAPPING = mapping(
    ("event_id", "event_id", "String"),
    ("user.id", "user_id", "String"),
    ("amount", "amount", "Float64"),
    ("created_at", "created_at", "DateTime64(3, 'UTC')"),
)


def events_doc(
    bootstrap: str, topic: str, table: str, ch: dict, checkpoint: Path, amount_type: str
) -> dict:
    """A dedup pipeline whose `amount` field is `amount_type` (int before the fix, float after)."""
    return pipeline_doc(
        topic=topic,
        fields=fields(
            ("event_id", "string"),
            ("user.id", "string"),
            ("amount", amount_type),
            ("created_at", "timestamp"),
        ),
        event_time="created_at",
        dedup={"key": "event_id", "time_window": "1h"},
        bootstrap_servers=bootstrap,
        clickhouse=ch,
        table=table,
        sink={"create_table": True, "order_by": ["event_id"]},
        mapping=MAPPING,
        checkpoint_dir=checkpoint,
    )


def event(i: int, amount: float | int, event_id: str | None = "") -> bytes:
    doc = {
        "event_id": f"e{i:05d}" if event_id == "" else event_id,
        "user": {"id": f"u{i % 7}"},
        "amount": amount,
        "created_at": (T0 + timedelta(seconds=i)).isoformat(),
    }
    return json.dumps(doc).encode()


def make_messages(good: int, fixable: int, malformed: int, no_key: int, seed: int) -> list[dict]:
    """Good events (int amounts), fixable ones (float amounts: a type mismatch while the
    schema says int), malformed JSON and events without their dedup key, shuffled."""
    msgs = [{"kind": "good", "i": i, "value": event(i, i % 50)} for i in range(good)]
    msgs += [
        {"kind": "fixable", "i": i, "value": event(i, i + 0.25)}
        for i in range(good, good + fixable)
    ]
    msgs += [
        {"kind": "malformed", "i": i, "value": b'{"event_id": "m%d", "amount": ' % i}
        for i in range(malformed)
    ]
    msgs += [{"kind": "no_key", "i": i, "value": event(i, 1, None)} for i in range(no_key)]
    random.Random(seed).shuffle(msgs)
    return msgs


def produce_tracked(bootstrap: str, topic: str, msgs: list[dict]) -> None:
    """Produce each message with a key and record its (partition, offset) in the dict."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10})

    def delivered(err, msg, m):
        assert err is None, err
        m["pos"] = (msg.partition(), msg.offset())

    for m in msgs:
        m["key"] = f"k{m['kind']}{m['i']}".encode()
        producer.produce(
            topic, key=m["key"], value=m["value"], on_delivery=lambda e, x, m=m: delivered(e, x, m)
        )
        producer.poll(0)
    producer.flush(30)
    assert all("pos" in m for m in msgs)


def by_class(store: DlqQueries) -> dict[tuple[str, str], tuple[int, int, int, int]]:
    return {
        (c.stage, c.error_class): (c.pending, c.consumed, c.replayed, c.replaying)
        for c in store.stats()
    }


def totals(store: DlqQueries) -> Counter:
    out: Counter = Counter()
    for c in store.stats():
        out.update(
            pending=c.pending, consumed=c.consumed, replayed=c.replayed, replaying=c.replaying
        )
    return out


class InjectedCrash(RuntimeError):
    """Stands for the replay process dying at a named point."""


def crash_at(point: str, occurrence: int):
    """A fault hook that raises the `occurrence`-th time the replay reaches `point`."""
    seen = Counter()

    def fault(name: str, _chunk: int) -> None:
        seen[name] += 1
        if name == point and seen[name] == occurrence:
            raise InjectedCrash(f"{point} #{occurrence}")

    return fault


@pytest.fixture
def setup(broker, chdb_path, tmp_path, unique_name):
    """Produce messages, run the pipeline (amount: int) and return what a test needs."""

    def build(amount_type: str) -> Pipeline:
        return parse_pipeline(
            events_doc(
                broker.bootstrap_servers,
                unique_name,
                unique_name,
                {"path": str(chdb_path)},
                tmp_path / "ckpt",
                amount_type,
            )
        )

    def run(msgs: list[dict], partitions: int = 3) -> tuple[PipelineRunner, DlqQueries]:
        broker.create_topic(unique_name, partitions)
        produce_tracked(broker.bootstrap_servers, unique_name, msgs)
        runner = PipelineRunner(build("int"))
        runner.run(until_caught_up=True)
        store = DlqQueries(runner.writer, runner.pipeline.dlq_table)
        store.open()
        return runner, store

    return build, run


def test_stats_show_consume_replay_and_purge(setup, unique_name):
    build, run = setup
    msgs = make_messages(good=120, fixable=40, malformed=10, no_key=10, seed=1)
    runner, store = run(msgs)
    writer = runner.writer
    assert writer.count(unique_name) == 120
    assert store.count() == 60

    # stats: by stage and error class, all pending
    assert by_class(store) == {
        ("parse", "type_mismatch"): (40, 0, 0, 0),
        ("parse", "malformed_json"): (10, 0, 0, 0),
        ("parse", "missing_field"): (10, 0, 0, 0),
    }

    # show: oldest first, with payload, key, position, stage, class, message and time
    bad = sorted((m for m in msgs if m["kind"] != "good"), key=lambda m: m["pos"])
    shown = store.pending(5)
    assert [(x.partition, x.offset) for x in shown] == [m["pos"] for m in bad[:5]]
    kinds = {"fixable": "type_mismatch", "malformed": "malformed_json", "no_key": "missing_field"}
    for letter, m in zip(shown, bad[:5], strict=True):
        assert (letter.topic, letter.payload, letter.key) == (unique_name, m["value"], m["key"])
        assert (letter.stage, letter.error_class) == ("parse", kinds[m["kind"]])
        assert letter.error and letter.attempts == 0
        assert abs(letter.failed_at - datetime.now(timezone.utc)) < timedelta(minutes=5)
    assert store.pending(5) == shown  # showing does not consume

    # consume: the same oldest records, then never shown again; re-marking is a no-op
    consumed = store.pending(7)
    store.mark_consumed(consumed)
    store.mark_consumed(consumed)
    assert writer.count(store.marks_table) == 7
    assert store.pending_count() == 53
    rest = store.pending(100)
    assert [(x.partition, x.offset) for x in rest] == [m["pos"] for m in bad[7:]]
    consumed_kinds = Counter(m["kind"] for m in bad[:7])
    assert totals(store) == Counter(pending=53, consumed=7)

    # replay with the fixed schema (amount: float): a dry run first, which writes nothing
    fixed = build("float")
    fixable = 40 - consumed_kinds["fixable"]
    failing = 20 - consumed_kinds["malformed"] - consumed_kinds["no_key"]
    dry = Replayer(fixed, writer, chunk_size=9).run(dry_run=True)
    assert (dry.replayed, dry.still_failing) == (fixable, failing)
    assert writer.count(unique_name) == 120 and totals(store)["pending"] == 53

    report = Replayer(fixed, writer, chunk_size=9).run()
    assert (report.replayed, report.still_failing) == (fixable, failing)
    assert report.chunks == -(-53 // 9)
    assert writer.count(unique_name) == 120 + fixable
    t = totals(store)
    assert t == Counter(pending=failing, consumed=7, replayed=fixable)
    # every message is a row, or a dead letter still pending or consumed; replayed ones are both
    assert writer.count(unique_name) + t["pending"] + t["consumed"] == 180
    assert t["pending"] + t["consumed"] + t["replayed"] == store.count() == 60
    expected = {
        f"e{m['i']:05d}": m["i"] + 0.25
        for m in bad[7:]
        if m["kind"] == "fixable"  # replayed rows: the consumed ones stay out
    }
    rows = writer.query_rows(f"SELECT event_id, amount FROM {unique_name} WHERE amount % 1 != 0")
    assert dict(rows) == expected

    # what still fails stays pending, with the replay's error and attempt count
    still = store.pending(100)
    assert len(still) == failing
    assert {x.error_class for x in still} <= {"malformed_json", "missing_field"}
    assert all(x.attempts == 1 and x.error for x in still)

    # a second replay inserts nothing more
    again = Replayer(fixed, writer, chunk_size=9).run()
    assert (again.replayed, again.still_failing) == (0, failing)
    assert writer.count(unique_name) == 120 + fixable
    assert {x.attempts for x in store.pending(100)} == {2}

    # purge: everything goes, pending and handled
    assert store.purge() == 60
    assert store.count() == 0 and store.stats() == []
    assert writer.count(store.marks_table) == 0


def test_replay_interrupted_mid_chunk_and_rerun_inserts_nothing_twice(setup, unique_name):
    build, run = setup
    msgs = make_messages(good=30, fixable=40, malformed=12, no_key=0, seed=2)
    runner, store = run(msgs, partitions=2)
    writer = runner.writer
    fixed = build("float")
    assert writer.count(unique_name) == 30 and store.count() == 52

    # 1st attempt dies after inserting the rows of its 2nd chunk, before marking them
    with pytest.raises(InjectedCrash):
        Replayer(fixed, writer, chunk_size=8, fault=crash_at("rows_inserted", 2)).run()
    t = totals(store)
    assert t["replaying"] == 8  # the claimed chunk, its rows already in the table
    assert t["replayed"] > 0 and t["pending"] > 0  # chunk 1 done, failing rows left pending
    after_first = writer.count(unique_name)
    assert after_first > 30

    # the interrupted chunk cannot be finished with another schema: that could lose rows
    with pytest.raises(ReplayConflict):
        Replayer(build("int"), writer, chunk_size=8).run()

    # 2nd attempt finishes the claimed chunk, then dies right after claiming a new one
    with pytest.raises(InjectedCrash):
        Replayer(fixed, writer, chunk_size=8, fault=crash_at("claimed", 2)).run()
    assert totals(store)["replaying"] == 8

    # 3rd attempt completes
    report = Replayer(fixed, writer, chunk_size=8).run()
    assert report.resumed_chunks == 1
    assert writer.count(unique_name) == 70
    distinct = writer.query_rows(f"SELECT uniqExact(event_id) FROM {unique_name}")[0][0]
    assert distinct == 70  # no event twice
    assert totals(store) == Counter(pending=12, replayed=40)
    assert {x.error_class for x in store.pending(100)} == {"malformed_json"}


def test_rows_clickhouse_refused_are_replayed_once_the_table_accepts_them(
    broker, chdb_path, tmp_path, unique_name
):
    """Rows refused at insert (a CHECK constraint) hold their message; replay re-inserts them."""
    doc = events_doc(
        broker.bootstrap_servers,
        unique_name,
        unique_name,
        {"path": str(chdb_path)},
        tmp_path / "ckpt",
        "float",
    )
    pipeline = parse_pipeline(doc)
    runner = PipelineRunner(pipeline)
    columns = ", ".join(f"`{m['column']}` {m['type']}" for m in MAPPING)
    runner.writer.command(
        f"CREATE TABLE {unique_name} ({columns}, CONSTRAINT positive CHECK amount >= 0) "
        "ENGINE = MergeTree ORDER BY event_id SETTINGS non_replicated_deduplication_window = 100"
    )
    broker.create_topic(unique_name, 2)
    amounts = {i: (-1.5 - i if i % 7 == 0 else float(i)) for i in range(40)}
    produce_tracked(
        broker.bootstrap_servers,
        unique_name,
        [{"kind": "e", "i": i, "value": event(i, a)} for i, a in amounts.items()],
    )
    runner.run(until_caught_up=True)
    writer = runner.writer
    store = DlqQueries(writer, pipeline.dlq_table)
    store.open()
    assert writer.count(unique_name) == 34
    assert by_class(store) == {("sink", "clickhouse_469"): (6, 0, 0, 0)}

    # not fixed yet: they fail again, at the sink
    report = Replayer(pipeline, writer).run()
    assert (report.replayed, report.still_failing) == (0, 6)
    still = store.pending(10)
    assert all(x.stage == "sink" and x.attempts == 1 and "positive" in x.error for x in still)

    writer.command(f"ALTER TABLE {unique_name} DROP CONSTRAINT positive")
    report = Replayer(pipeline, writer).run()
    assert (report.replayed, report.still_failing) == (6, 0)
    rows = writer.query_rows(f"SELECT event_id, amount, created_at FROM {unique_name}")
    assert len(rows) == 40
    assert {r[0]: r[1] for r in rows} == {f"e{i:05d}": a for i, a in amounts.items()}
    assert {r[0]: r[2].replace(tzinfo=timezone.utc) for r in rows} == {
        f"e{i:05d}": T0 + timedelta(seconds=i) for i in amounts
    }
    assert totals(store) == Counter(replayed=6)


# ---------------------------------------------------------------------------- the CLI

CH_SECRET = "ch-pass-Zq81x7"
SASL_SECRET = "sasl-pass-Kf39w2"


def streamsift(*args: str, stdin=None, timeout: float = 240) -> subprocess.CompletedProcess:
    return cli.streamsift(*args, timeout=timeout, stdin=stdin or subprocess.DEVNULL)


def dump_rows(ch_dir: Path, queries: list[str]) -> str:
    """The rows `queries` return, one repr per line, read by a separate process (chdb allows
    one data directory per process)."""
    code = textwrap.dedent(
        f"""
        import clickhouse_connect
        c = clickhouse_connect.get_client(dsn="chdb://{ch_dir}")
        for sql in {queries!r}:
            for row in c.query(sql).result_rows:
                print(repr(row))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_dlq_commands_end_to_end_without_leaking_secrets(broker, tmp_path, unique_name):
    ch_dir = tmp_path / "ch"
    doc = events_doc(
        broker.bootstrap_servers,
        unique_name,
        "events",
        {"path": str(ch_dir), "password": CH_SECRET},
        tmp_path / "ckpt",
        "int",
    )
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    file = str(path)
    msgs = make_messages(good=50, fixable=12, malformed=4, no_key=4, seed=3)
    broker.create_topic(unique_name, 3)
    produce_tracked(broker.bootstrap_servers, unique_name, msgs)
    outputs: list[str] = []

    def cli(*args: str, code: int = 0, **kw) -> subprocess.CompletedProcess:
        proc = streamsift(*args, **kw)
        outputs.extend([proc.stdout, proc.stderr])
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr
        return proc

    cli("run", file, "--until-caught-up", "--verbose", "--data-dir", str(tmp_path / "state"))

    stats = json.loads(cli("dlq", "stats", file, "--json").stdout)
    assert (stats["total"], stats["pending"], stats["consumed"], stats["replayed"]) == (
        20,
        20,
        0,
        0,
    )
    assert {(c["error_class"], c["pending"]) for c in stats["by_class"]} == {
        ("type_mismatch", 12),
        ("malformed_json", 4),
        ("missing_field", 4),
    }
    text = cli("dlq", "stats", file).stdout
    assert "type_mismatch" in text and "total" in text

    bad = sorted((m for m in msgs if m["kind"] != "good"), key=lambda m: m["pos"])
    shown = [
        json.loads(line)
        for line in cli("dlq", "show", file, "-n", "3", "--json").stdout.splitlines()
    ]
    assert [(r["partition"], r["offset"]) for r in shown] == [m["pos"] for m in bad[:3]]
    assert [r["payload"].encode() for r in shown] == [m["value"] for m in bad[:3]]
    assert all(r["topic"] == unique_name and r["error"] and r["failed_at"] for r in shown)
    human = cli("dlq", "show", file, "-n", "2")
    assert f"{unique_name}/{bad[0]['pos'][0]}@{bad[0]['pos'][1]}" in human.stdout
    assert "2 of 20 pending shown" in human.stderr

    consumed = cli("dlq", "consume", file, "-n", "2", "--json").stdout.splitlines()
    assert [(json.loads(x)["partition"], json.loads(x)["offset"]) for x in consumed] == [
        m["pos"] for m in bad[:2]
    ]
    after = [
        json.loads(x) for x in cli("dlq", "show", file, "-n", "100", "--json").stdout.splitlines()
    ]
    assert [(r["partition"], r["offset"]) for r in after] == [m["pos"] for m in bad[2:]]

    # purge without a terminal and without --yes refuses; a "no" on a terminal aborts
    refused = cli("dlq", "purge", file, code=2)
    assert "--yes" in refused.stderr and "refusing" in refused.stderr
    master, slave = pty.openpty()
    try:
        os.write(master, b"n\n")
        declined = cli("dlq", "purge", file, code=1, stdin=slave)
    finally:
        os.close(master)
        os.close(slave)
    assert "delete all 20 dead letters (18 pending)" in declined.stderr
    assert "aborted: nothing deleted" in declined.stderr  # the stats below still count all 20

    # fix the schema, replay: type mismatches land in the table, the rest stays pending
    doc["source"]["schema"]["fields"][2]["type"] = "float"
    path.write_text(yaml.safe_dump(doc))
    consumed_kinds = Counter(m["kind"] for m in bad[:2])
    fixable = 12 - consumed_kinds["fixable"]
    report = json.loads(cli("dlq", "replay", file, "--json").stdout)
    assert (report["replayed"], report["still_failing"]) == (fixable, 18 - fixable)
    stats = json.loads(cli("dlq", "stats", file, "--json").stdout)
    assert (stats["total"], stats["pending"], stats["consumed"], stats["replayed"]) == (
        20,
        18 - fixable,
        2,
        fixable,
    )
    human = cli("dlq", "replay", file)
    assert f"replayed 0 record(s) into events; {18 - fixable} still failing" in human.stdout

    # usage and setup errors: one line and a hint, the right exit code
    bad_n = cli("dlq", "show", file, "-n", "0", code=2)
    assert "must be at least 1" in bad_n.stderr
    missing = cli("dlq", "stats", str(tmp_path / "nope.yaml"), code=2)
    assert "nope.yaml" in missing.stderr
    other = dict(doc, dlq={"table": "never_written"})
    other_path = tmp_path / "other.yaml"
    other_path.write_text(yaml.safe_dump(other))
    no_dlq = cli("dlq", "stats", str(other_path), code=1)
    assert "never_written" in no_dlq.stderr and "hint: run the pipeline first" in no_dlq.stderr

    # the table holds every good and every replayed event once; the DLQ rows and marks hold
    # no secret, and no command printed one (the --verbose run included)
    dump = dump_rows(
        ch_dir,
        [
            "SELECT count(), uniqExact(event_id) FROM events",
            "SELECT * FROM events_dlq",
            "SELECT * FROM events_dlq_handled FINAL",
        ],
    )
    lines = dump.splitlines()
    assert lines[0] == f"({50 + fixable}, {50 + fixable})"
    assert len(lines) == 1 + 20 + 20  # every dead letter, and one mark per record
    assert CH_SECRET not in dump
    assert not any(CH_SECRET in out for out in outputs)

    # purge for real, confirmed with --yes
    assert "purged 20 dead letter(s)" in cli("dlq", "purge", file, "--yes").stdout
    assert json.loads(cli("dlq", "stats", file, "--json").stdout)["total"] == 0


def test_run_and_dlq_with_sasl_credentials_never_print_them(
    broker, chdb_path, tmp_path, unique_name, caplog, capfd
):
    """The bundled broker has no SASL: the run fails to connect, and says so without the
    secret; every log record (librdkafka's included) and the dlq commands' output omit it."""
    doc = events_doc(
        broker.bootstrap_servers,
        unique_name,
        unique_name,
        {"path": str(chdb_path), "password": CH_SECRET},
        tmp_path / "ckpt",
        "int",
    )
    doc["source"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "PLAIN",
        "username": "streamsift",
        "password": SASL_SECRET,
    }
    doc["source"]["connect_timeout"] = "3s"
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    broker.create_topic(unique_name, 1)
    pipeline = parse_pipeline(doc)
    assert pipeline.primary_source.security.librdkafka()["sasl.password"] == SASL_SECRET

    caplog.set_level(logging.DEBUG)
    # `streamsift` commands run earlier in the session quiet librdkafka's logger: hear it here.
    caplog.set_level(logging.DEBUG, logger="streamsift.kafka.librdkafka")
    with pytest.raises((SourceError, PipelineFailed)) as failed:
        PipelineRunner(pipeline).run(until_caught_up=True)
    assert unique_name in str(failed.value)
    assert any("SASL" in r.getMessage() for r in caplog.records)  # librdkafka was heard
    assert main(["dlq", "stats", str(path), "--json"]) == 0  # the run created the DLQ table
    assert main(["dlq", "show", str(path)]) == 0
    assert main(["dlq", "replay", str(path)]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out.splitlines()[0])["total"] == 0
    texts = [out, err, caplog.text, "".join(traceback.format_exception(failed.value))]
    for text in texts:
        assert SASL_SECRET not in text and CH_SECRET not in text


def test_dlq_command_while_another_process_holds_embedded_clickhouse(tmp_path):
    """chdb allows one process per data directory: the command says so instead of crashing."""
    ch_dir = tmp_path / "ch"
    with held_by_another_process(ch_dir):
        doc = events_doc("127.0.0.1:1", "t", "events", {"path": str(ch_dir)}, tmp_path, "int")
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(doc))
        proc = streamsift("dlq", "stats", str(path))
        assert proc.returncode == 1
        assert "another process" in proc.stderr and "hint:" in proc.stderr
        assert "Traceback" not in proc.stderr
