"""The kill -9 harness's pipeline shapes (chaos.py runs the kills): what each produces, the
pipeline it runs, and its verdict against the generator's truth.

Two pipeline shapes:

- `dedup`: one 3-partition topic of generated events (with re-sends and one malformed
  payload per `malformed_every` events), deduplicated on `event_id`. The verdict counts
  missing and doubled keys, rows holding a re-send instead of the first version, and the DLQ.
- `join`: the pipeline of `streamsift demo --join` (streamsift.sample_data.join_events): orders
  and user profile events on two 3-partition topics, deduplicated each, then the temporal
  join orders ⋈ users on the user id; inner by default. Both topics keep receiving events,
  in step in event time, in slices spread over the whole kill phase, with one malformed
  message per `malformed_every` messages on each topic. The truth is the independent
  reference join over everything produced; the verdict compares the full multiset of
  joined rows (order id, profile event id, amount, user name, plan): `missing` counts
  reference rows ClickHouse lacks, `duplicated` rows it holds more often than the
  reference (doubles and rows that should not exist). The DLQ count must be exact.

  Why the expectation is exact whatever the kill moments: a replay re-runs a micro-batch
  with the offsets and the watermark Spark logged for it, and no record ever falls behind
  the join's watermark (the older side's newest event time minus 1 h), because both topics
  are produced in event-time order, in step, and re-sends follow their original within five
  messages. Then an inner join's output does not depend on where micro-batches begin and
  end. With `join_type="left"`, the NULL rows of orders without a match appear only once the
  watermark passes their window, which needs later events: the harness then holds back one
  event a day after all others on each topic (`tail-order` and its user's profile), produces
  them after a first catch-up run, and catches up again, so every NULL row is due.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import Producer

from streamsift.embedded.broker import Broker
from streamsift.sample_data.generator import (
    EventSpec,
    JoinSpec,
    JoinStreams,
    Truth,
    generate,
    generate_join_streams,
    produce,
)
from streamsift.sample_data.join_events import (
    BAD_ORDERS,
    BAD_USERS,
    ORDERS_TOPIC,
    ROW_COLUMNS,
    TABLE,
    USERS_TOPIC,
    in_step,
    join_pipeline_doc,
    reference_rows,
)
from streamsift.sample_data.schema import EVENT_FIELDS, EVENT_MAPPING

SHAPES = ("dedup", "join")
JOIN_TYPES = ("inner", "left")
MAX_ROWS_PER_BATCH = 8_000  # per source: a backlog after a restart takes several batches
PRODUCE_BATCH = 2_000  # dedup shape: events produced at once


@dataclass(frozen=True)
class ChaosOptions:
    kills: int = 20
    events: int = 60_000  # dedup: events; join: order messages (re-sends included)
    duplicates: float = 0.2
    mode: str = "embedded"  # or "server": ClickHouse behind the HTTP endpoint, executor inserts
    min_up_s: float = 4.0
    max_up_s: float = 25.0
    seed: int = 1
    malformed_every: int = 500  # one bad payload per this many events (to count the DLQ too)
    work_dir: Path = Path(".streamsift/chaos")
    shape: str = "dedup"  # or "join"
    join_type: str = "inner"  # join shape: inner or left (outer)
    join_mode: str = "interval"  # join shape: interval (every pair) or latest (one per order)
    users: int = 1_000  # join shape: users publishing profile events
    # join shape: spread producing over this long (None: over the whole kill phase, paced by
    # the length of the rounds so far)
    produce_s: float | None = None
    # Count each round's time before the kill from the process start ("start"), or from the
    # moment its pipeline starts working on a micro-batch ("work": kills land in batches
    # however slowly Spark starts on a busy machine).
    up_from: str = "start"

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"shape must be one of {', '.join(SHAPES)}")
        if self.join_type not in JOIN_TYPES:
            raise ValueError(f"join_type must be one of {', '.join(JOIN_TYPES)}")
        if self.join_mode not in ("interval", "latest"):
            raise ValueError("join_mode must be interval or latest")
        if self.mode not in ("embedded", "server"):
            raise ValueError("mode must be embedded or server")
        if self.up_from not in ("start", "work"):
            raise ValueError("up_from must be start or work")


@dataclass
class Verdict:
    """What ClickHouse holds against what the reference expects."""

    produced: int
    expected: int
    in_clickhouse: int
    missing: int
    duplicated: int
    wrong_version: int
    dlq_expected: int
    dlq_in_clickhouse: int


class Pacing(Protocol):
    """How long the kill phase has left (chaos.py's kill rounds), to spread producing over it."""

    def remaining_s(self) -> float: ...


class DedupShape:
    """One topic of generated events, deduplicated on the event id."""

    label = "dedup"

    def __init__(self, opts: ChaosOptions, bootstrap: str) -> None:
        self.opts, self.bootstrap = opts, bootstrap
        self.truth = Truth()
        self.phase: Pacing | None = None  # set by run_chaos before producing starts
        self.malformed = 0

    def create_topics(self, broker: Broker) -> None:
        broker.create_topic("chaos", 3)

    def pipeline_doc(self, sink: dict[str, Any], work: Path) -> dict[str, Any]:
        return {
            "name": "chaos",
            "source": {
                "bootstrap_servers": self.bootstrap,
                "topic": "chaos",
                "schema": {"fields": EVENT_FIELDS, "event_time": "created_at"},
            },
            "dedup": {"key": "event_id", "time_window": "1h"},
            "sink": {
                "clickhouse": sink,
                "table": "events",
                "create_table": True,
                "mapping": EVENT_MAPPING,
                "max_batch_size": 2_000,
            },
            "runtime": {
                "checkpoint_dir": str(work / "checkpoint"),
                "max_rows_per_batch": MAX_ROWS_PER_BATCH,
            },
        }

    def _pause(self, batches_left: int) -> float:
        """Between two batches: with `up_from="work"` the events are spread over the kill
        phase, so that every round has new events to work on (a drained pipeline gives a
        kill nothing to interrupt); counted from the start, kills also land in start-up and
        recovery, and the events go in within seconds, as before."""
        if self.phase is None or self.opts.up_from != "work":
            return 0.5
        return max(0.5, self.phase.remaining_s() / batches_left)

    def produce(self) -> None:
        """Events in batches of 2,000 (one malformed payload per `malformed_every`)."""
        opts = self.opts
        events = generate(EventSpec(opts.events, opts.duplicates, 2_000, opts.seed), self.truth)
        batches_left = math.ceil(opts.events / PRODUCE_BATCH)
        batch: list[Any] = []
        for i, event in enumerate(events, 1):
            batch.append(event)
            if opts.malformed_every and i % opts.malformed_every == 0:
                batch.append(b'{"event_id": "broken", "amount": ')
                self.malformed += 1
            if len(batch) >= PRODUCE_BATCH:
                produce(self.bootstrap, "chaos", batch)
                batch = []
                batches_left = max(1, batches_left - 1)
                time.sleep(self._pause(batches_left))
        if batch:
            produce(self.bootstrap, "chaos", batch)

    def finish(self, path: Path) -> None:
        catch_up(path)

    def verdict(self, client: Any) -> Verdict:
        counts = dict(
            client.query("SELECT event_id, count() FROM events GROUP BY event_id").result_rows
        )
        expected = set(self.truth.first_versions)
        return Verdict(
            produced=self.truth.produced + self.malformed,
            expected=len(expected),
            in_clickhouse=sum(counts.values()),
            missing=len(expected - set(counts)),
            duplicated=sum(c - 1 for c in counts.values() if c > 1),
            wrong_version=int(client.command("SELECT count() FROM events WHERE attempt > 0")),
            dlq_expected=self.malformed,
            dlq_in_clickhouse=int(client.command("SELECT count() FROM events_dlq")),
        )


class JoinShape:
    """Orders ⋈ user profiles (streamsift demo --join), both topics growing during the kills."""

    SLICES = 100  # produce the streams in this many slices, evenly over the kill phase

    def __init__(self, opts: ChaosOptions, bootstrap: str) -> None:
        self.opts, self.bootstrap = opts, bootstrap
        latest = ", latest" if opts.join_mode == "latest" else ""
        self.label = f"join ({opts.join_type}{latest})"
        self.left = opts.join_type == "left"
        self.streams: JoinStreams = generate_join_streams(
            JoinSpec(
                orders=opts.events,
                users=opts.users,
                duplicates=opts.duplicates,
                seed=opts.seed,
                tail=timedelta(days=1) if self.left else None,
            )
        )
        tail = self.streams.tail_events // 2  # held back: produced after a first catch-up
        self.body = (
            self.streams.orders[: len(self.streams.orders) - tail],
            self.streams.users[: len(self.streams.users) - tail],
        )
        self.tail = (
            self.streams.orders[len(self.body[0]) :],
            self.streams.users[len(self.body[1]) :],
        )
        self.malformed = {ORDERS_TOPIC: 0, USERS_TOPIC: 0}
        self.produced = 0
        self.phase: Pacing | None = None  # set by run_chaos before producing starts

    def create_topics(self, broker: Broker) -> None:
        broker.create_topic(ORDERS_TOPIC, 3)
        broker.create_topic(USERS_TOPIC, 3)

    def pipeline_doc(self, sink: dict[str, Any], work: Path) -> dict[str, Any]:
        doc = join_pipeline_doc(
            self.bootstrap,
            work,
            self.opts.join_type,
            MAX_ROWS_PER_BATCH,
            clickhouse=sink,
            checkpoint_dir=work / "checkpoint",
            name="chaos-join",
        )
        doc["sink"]["max_batch_size"] = 2_000  # several chunks (tokens) per batch
        doc["join"]["mode"] = self.opts.join_mode
        return doc

    def produce(self) -> None:
        order = in_step(*self.body)
        per = max(1, math.ceil(len(order) / self.SLICES))
        slices = math.ceil(len(order) / per)
        produce_s = self.opts.produce_s
        started = time.monotonic()
        bad = {ORDERS_TOPIC: BAD_ORDERS, USERS_TOPIC: BAD_USERS}
        keys = {ORDERS_TOPIC: "order_id", USERS_TOPIC: "event_id"}
        seen = {ORDERS_TOPIC: 0, USERS_TOPIC: 0}
        out = KafkaOut(self.bootstrap)
        for i, start in enumerate(range(0, len(order), per)):
            for topic, event in order[start : start + per]:
                out.send(topic, str(event[keys[topic]]).encode(), json.dumps(event).encode())
                seen[topic] += 1
                if self.opts.malformed_every and seen[topic] % self.opts.malformed_every == 0:
                    key, value = bad[topic][self.malformed[topic] % len(bad[topic])]
                    out.send(topic, key, value)
                    self.malformed[topic] += 1
            self.produced += out.flush()  # every slice is on the broker before the pause
            if produce_s is not None:
                time.sleep(max(0.0, started + produce_s * (i + 1) / slices - time.monotonic()))
            elif self.phase is not None and i + 1 < slices:
                time.sleep(self.phase.remaining_s() / (slices - i - 1))

    def finish(self, path: Path) -> None:
        catch_up(path)
        if self.left:  # the watermark events close every window: NULL rows become due
            out = KafkaOut(self.bootstrap)
            for topic, key, events in (
                (ORDERS_TOPIC, "order_id", self.tail[0]),
                (USERS_TOPIC, "event_id", self.tail[1]),
            ):
                for event in events:
                    out.send(topic, str(event[key]).encode(), json.dumps(event).encode())
            self.produced += out.flush()
            catch_up(path)

    def verdict(self, client: Any) -> Verdict:
        expected = reference_rows(self.streams.orders, self.streams.users, self.opts.join_type)
        actual: Counter = Counter(
            (o, e, float(a), n, p)
            for o, e, a, n, p in client.query(f"SELECT {ROW_COLUMNS} FROM {TABLE}").result_rows
        )
        dlq_expected = sum(self.malformed.values())
        dlq = int(client.command(f"SELECT count() FROM {TABLE}_dlq"))
        if self.opts.join_mode == "latest":
            return _latest_verdict(expected.rows, actual, self.produced, dlq_expected, dlq)
        missing, extra = expected.rows - actual, actual - expected.rows
        return Verdict(
            produced=self.produced,
            expected=sum(expected.rows.values()),
            in_clickhouse=sum(actual.values()),
            missing=sum(missing.values()),
            duplicated=sum(extra.values()),
            wrong_version=0,
            dlq_expected=dlq_expected,
            dlq_in_clickhouse=dlq,
        )


def _latest_verdict(
    pairs: Counter, actual: Counter, produced: int, dlq_expected: int, dlq: int
) -> Verdict:
    """`join.mode: latest`: one row per order, with one of its partners in the windows (the
    interval join's rows are every candidate; which one is written depends on what had
    arrived when the order was joined), or its NULL row; `wrong_version` counts rows whose
    profile is not a candidate of their order."""
    candidates: dict[str, set] = {}
    for row in pairs:
        candidates.setdefault(row[0], set()).add(row)
    written: Counter = Counter()
    wrong = 0
    for row, n in actual.items():
        written[row[0]] += n
        wrong += n * (row not in candidates.get(row[0], ()))
    return Verdict(
        produced=produced,
        expected=len(candidates),
        in_clickhouse=sum(actual.values()),
        missing=sum(1 for order in candidates if not written[order]),
        duplicated=sum(n - 1 for n in written.values() if n > 1),
        wrong_version=wrong,
        dlq_expected=dlq_expected,
        dlq_in_clickhouse=dlq,
    )


class KafkaOut:
    """One idempotent producer for a whole run; `flush` waits for the broker's acks."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True}
        )
        self.acked = 0
        self.failed: list[str] = []

    def _delivered(self, err: object, _msg: object) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed.append(str(err))

    def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, on_delivery=self._delivered)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)

    def flush(self) -> int:
        """Wait for everything sent so far; return how many messages were acked since the last
        flush."""
        if self.producer.flush(60) > 0:
            raise RuntimeError("Kafka did not acknowledge every message within 60 s")
        if self.failed:
            raise RuntimeError(f"{len(self.failed)} messages were not delivered: {self.failed[0]}")
        acked, self.acked = self.acked, 0
        return acked


def make_shape(opts: ChaosOptions, bootstrap: str) -> DedupShape | JoinShape:
    """The shape `opts.shape` names, producing to the broker at `bootstrap`."""
    return (JoinShape if opts.shape == "join" else DedupShape)(opts, bootstrap)


def catch_up(path: Path) -> None:
    """Run the pipeline once more, until caught up, and wait for it."""
    final = subprocess.run(
        [sys.executable, "-m", "streamsift.cli.main", "run", str(path), "--until-caught-up"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if final.returncode != 0:
        raise RuntimeError(f"final catch-up run failed: {final.stderr[-2000:]}")
