"""A load generator: realistic JSON events at a controlled rate, with ground truth.

Builds on streamsift.sample_data.generator, the demo's event stream (same event core: id, type, nested user, tags, amount, attempt,
created_at) and adds what load tests need:

- richer events (session and device objects, page, country) padded to `payload_bytes`;
- a token-bucket rate limit, with the achieved rate measured from delivery reports;
- a `produced_at_ms` field stamped when each message is handed to the producer, so a sink
  can measure end-to-end latency (it is the last field, so stamping is a byte splice);
- duplicates that re-send one of the last `keys` originals (retries come soon after the
  original, as in real streams), and late events (fresh ids whose event time is `late_by`
  behind the stream);
- ground truth that fits in a small JSON file however many events are sent: counts and a
  checksum of the ids a correct dedup pipeline must hold;
- optionally (`JoinLoadSpec`) a second, related stream for a join: user profile events keyed
  by their own id, joined to the events on the user id, and the truth of an inner join with
  dedup on both sides (streamsift.sample_data.reference).

Its events' pipeline schema and ClickHouse mapping are `LOAD_FIELDS` and `LOAD_MAPPING` of
streamsift.sample_data.schema, the join stream's `JOIN_FIELDS`.

The event sequence is a pure function of the seed; only `produced_at_ms` depends on time.
Messages are keyed by `event_id`, so all versions of an id share a partition.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from streamsift.sample_data.generator import BASE_TIME, EventSpec, make_event
from streamsift.sample_data.reference import JoinTruth, reference_join
from streamsift.sample_data.schema import id_checksum_part
from streamsift_bench.common import sample_record

_COUNTRIES = ["DE", "US", "FR", "IN", "BR", "JP", "GB", "NL", "PL", "ES"]
_OS = ["android", "ios", "windows", "macos", "linux"]
_BROWSERS = ["chrome", "safari", "firefox", "edge"]
_REFERRERS = ["", "https://search.example/", "https://news.example/", "https://mail.example/"]
_STAMP_KEY = b',"produced_at_ms":'
_PLANS = ["free", "free", "free", "pro", "team", "enterprise"]

# `make_event` draws each event's user from u0..u999: the keys the join stream can match.
LOAD_USERS = 1000
# In join mode a late event's user id gets this prefix: a key no profile event carries, so
# whether the join drops the event as behind its watermark or not, it matches nothing.
LATE_USER_PREFIX = "late-"


# The bundled broker's per-request cost grows with the number of record batches in a
# partition: at 2,000 events/s, 5 ms batches (~3 events each) drove it to a full core within
# a minute and stalled fetches after ~5 minutes, while 100 ms batches kept it at ~0.2 core
# (see docs/benchmarks.md). 50 ms keeps batches large at live rates and adds at most 50 ms.
DEFAULT_LINGER_MS = 50


@dataclass(frozen=True)
class LoadSpec:
    """What to generate. `keys` bounds how far back a duplicate may reach (in originals)."""

    duplicates: float = 0.2
    keys: int = 10_000
    late: float = 0.0
    late_by: timedelta = timedelta(hours=2)
    payload_bytes: int = 1024
    seed: int = 7
    step_ms: int = 10  # event time advances this much per original event

    def __post_init__(self) -> None:
        if not 0 <= self.duplicates < 1:
            raise ValueError("duplicates must be a share in [0, 1)")
        if not 0 <= self.late < 1 or self.duplicates + self.late >= 1:
            raise ValueError("late must be a share in [0, 1), and duplicates + late < 1")
        if self.keys < 1:
            raise ValueError("keys must be at least 1")


SAMPLE_MAX = 200  # events whose column values the truth keeps


@dataclass
class LoadTruth:
    """What a correct dedup pipeline must hold after consuming everything that was sent."""

    produced: int = 0
    duplicates: int = 0
    late: int = 0
    expected_unique: int = 0
    id_checksum: int = 0  # sum of id_checksum_part over the expected ids
    # Column values of some original events (common.sample_record), spread over the stream:
    # every `sample_every`-th original; when more than SAMPLE_MAX are held, every other one
    # is dropped and the stride doubles. The verification compares them with the table.
    sample: list[dict] = field(default_factory=list)
    sample_every: int = 1

    def offer(self, index: int, event: dict) -> None:
        """Consider the `index`-th original event for the sample."""
        if index % self.sample_every:
            return
        self.sample.append(sample_record(event))
        if len(self.sample) > SAMPLE_MAX:
            self.sample = self.sample[::2]
            self.sample_every *= 2

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JoinLoadSpec:
    """The second stream of a join, and the join its truth is computed for.

    Right events are user profile events `{event_id, user: {id, name, plan, country},
    version, attempt, updated_at}`, keyed by `event_id` (their dedup key); the join key is the
    user id on both sides. `right_events` right messages go out per `left_events` left
    messages, interleaved with them; `duplicates` of them are re-sends (exact copies with a
    higher `attempt`) of one of the last `resend_reach` profile events. `unmatched` of the
    left stream's users never get a profile event. A new profile event's time is the left
    stream's current event time plus a jitter of at most a quarter of the smaller join window,
    so matches fall inside the windows and either stream stays in order to within half a
    window (the join's watermark delay is a whole window by default).

    With the defaults (one right message per ten left ones, 20% re-sends on both sides, 10
    ms of event time per new event) a matched user publishes a profile event about every 90 s
    of event time, so the 90 s of the two windows give about one joined row per left event.

    The truth is that of an inner join with first-wins dedup on both sides (`dedup_window`)
    and the windows `left_window`, `right_window`: a right record at tr matches a left record
    at tl with the same user when tl - right_window <= tr <= tl + left_window.
    """

    right_events: int = 1
    left_events: int = 10
    duplicates: float = 0.2
    unmatched: float = 0.1
    left_window: timedelta = timedelta(seconds=30)
    right_window: timedelta = timedelta(seconds=60)
    dedup_window: timedelta = timedelta(hours=1)
    resend_reach: int = 1000

    def __post_init__(self) -> None:
        if self.right_events < 0 or self.left_events < 1:
            raise ValueError("right_events must be >= 0 and left_events >= 1")
        if not 0 <= self.duplicates < 1:
            raise ValueError("join duplicates must be a share in [0, 1)")
        if not 0 <= self.unmatched < 1:
            raise ValueError("unmatched must be a share in [0, 1)")
        if self.left_window <= timedelta(0) or self.right_window <= timedelta(0):
            raise ValueError("join windows must be positive")
        if self.dedup_window <= timedelta(0):
            raise ValueError("the dedup window must be positive")
        if self.resend_reach < 1:
            raise ValueError("resend_reach must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = asdict(self)
        for name in ("left_window", "right_window", "dedup_window"):
            doc[f"{name}_s"] = doc.pop(name).total_seconds()
        return doc


def _epoch_ms(iso: str) -> int:
    return (datetime.fromisoformat(iso) - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=BASE_TIME.tzinfo)
_BASE_MS = (BASE_TIME - _EPOCH) // timedelta(milliseconds=1)


@dataclass
class SendReport:
    """One `send` call: how many messages, how fast they went out, how fast Kafka acked."""

    target_rps: float | None
    sent: int
    acked: int
    seconds: float
    started_at: float  # wall clock (time.time()) when the first message was handed over
    ended_at: float
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (time, sent, acked)
    join_sent: int = 0  # right-stream messages sent alongside (not in the rate)
    join_acked: int = 0

    @property
    def achieved_rps(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "target_rps": self.target_rps,
            "sent": self.sent,
            "acked": self.acked,
            "seconds": round(self.seconds, 3),
            "achieved_rps": round(self.achieved_rps, 1),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }
        if self.join_sent:
            doc.update(join_sent=self.join_sent, join_acked=self.join_acked)
        return doc


class TokenBucket:
    """Hands out up to `rate` tokens a second, with bursts of at most `burst` tokens."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = float(rate)
        self.capacity = max(1.0, burst if burst is not None else rate / 50)  # 20 ms of tokens
        self.tokens = 0.0
        self.last = time.monotonic()

    def take(self, wanted: int) -> int:
        """Wait until at least one token is there; take up to `wanted` of them."""
        while True:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens >= 1:
                granted = min(wanted, int(self.tokens))
                self.tokens -= granted
                return granted
            time.sleep(min(0.005, (1 - self.tokens) / self.rate))


Prepared = list[tuple[bytes, bytes]]  # (key, value head): value = head + ms digits + b"}"


class LoadGenerator:
    """Produces a reproducible event stream into one topic, in steps of any size and rate.

    With `join` (and `join_topic`), it also produces the join's right stream into
    `join_topic`, interleaved with the events, and `join_truth()` gives what an inner join
    with dedup on both sides must write. The events themselves are the same as without
    `join`, except that a late event's user id gets `LATE_USER_PREFIX` (so it matches
    nothing, whatever the join's watermark does with it). Join mode keeps (id, user, time)
    of every message sent, about 100 bytes each, to compute that truth.
    """

    def __init__(
        self,
        spec: LoadSpec,
        bootstrap_servers: str,
        topic: str,
        producer_config: dict[str, Any] | None = None,
        join: JoinLoadSpec | None = None,
        join_topic: str | None = None,
        linger_ms: int | None = None,  # None: DEFAULT_LINGER_MS
    ) -> None:
        if (join is None) != (join_topic is None):
            raise ValueError("a join stream needs both a JoinLoadSpec and a join topic")
        self.spec = spec
        self.topic = topic
        self.truth = LoadTruth()
        self._rng = random.Random(spec.seed)
        self._event_spec = EventSpec(step_ms=spec.step_ms, seed=spec.seed)
        self._recent: deque[dict] = deque(maxlen=spec.keys)
        self._originals = 0
        self._sessions: dict[int, int] = {}
        self._acked = 0
        self._failed: list[str] = []
        self.join = join
        self.join_topic = join_topic
        self._clock_ms = _BASE_MS  # event time of the newest (not late) event
        if join is not None:
            # its own random sequence: the events are the same with or without a join stream
            self._jrng = random.Random(f"join:{spec.seed}")
            n_unmatched = round(join.unmatched * LOAD_USERS)
            unmatched = set(self._jrng.sample(range(LOAD_USERS), n_unmatched))
            self._join_users = [u for u in range(LOAD_USERS) if u not in unmatched]
            self.join_unmatched_users = sorted(f"u{u}" for u in unmatched)
            self._jrecent: deque[dict] = deque(maxlen=join.resend_reach)
            self._jversions: dict[int, int] = {}
            self._jitter_ms = min(join.left_window, join.right_window) // timedelta(milliseconds=4)
            # messages made but not sent yet: (left messages made before it, key, value)
            self._jpending: deque[tuple[int, bytes, bytes]] = deque()
            self._jacked = 0
            self._left_sent = 0
            # (id, user, event time ms) of every message, for join_truth()
            self._left_ids: list[str] = []
            self._left_keys: list[str] = []
            self._left_ms = array("q")
            self._right_ids: list[str] = []
            self._right_keys: list[str] = []
            self._right_ms = array("q")
        self._producer_config = {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": DEFAULT_LINGER_MS if linger_ms is None else linger_ms,
            "enable.idempotence": True,
            "compression.type": "lz4",
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            **(producer_config or {}),
        }
        self._producer_instance: Producer | None = None

    @property
    def _producer(self) -> Producer:
        """Created on first send: generating and preparing events needs no broker."""
        if self._producer_instance is None:
            self._producer_instance = Producer(self._producer_config)
        return self._producer_instance

    # ------------------------------------------------------------------ events

    def _new_event(self, late: bool) -> dict:
        rng = self._rng
        index = self._originals
        self._originals += 1
        event = make_event(rng, index, self._event_spec)
        user = int(event["user"]["id"][1:])
        if rng.random() < 0.05:  # a user starts a new session now and then
            self._sessions[user] = self._sessions.get(user, 0) + 1
        event["user"]["country"] = _COUNTRIES[user % len(_COUNTRIES)]
        event["session"] = {
            "id": f"s{user}-{self._sessions.get(user, 0)}",
            "device": {"os": _OS[user % len(_OS)], "browser": rng.choice(_BROWSERS)},
        }
        event["page"] = {"url": f"/p/{rng.randrange(10_000)}", "referrer": rng.choice(_REFERRERS)}
        if late:
            when = BASE_TIME + timedelta(milliseconds=index * self.spec.step_ms) - self.spec.late_by
            event["created_at"] = when.isoformat()
            if self.join is not None:
                event["user"]["id"] = LATE_USER_PREFIX + event["user"]["id"]
        else:
            self._clock_ms = _BASE_MS + index * self.spec.step_ms
        return event

    def events(self, n: int) -> Iterator[dict]:
        """The next `n` events of the stream (updates the truth as it goes)."""
        rng = self._rng
        spec = self.spec
        truth = self.truth
        for _ in range(n):
            roll = rng.random()
            if roll < spec.duplicates and self._recent:
                original = rng.choice(self._recent)
                original["attempt"] += 1
                event = dict(original)
                truth.duplicates += 1
            else:
                late = roll >= 1 - spec.late
                event = self._new_event(late)
                truth.offer(truth.expected_unique, event)
                truth.expected_unique += 1
                truth.id_checksum += id_checksum_part(event["event_id"])
                if late:
                    truth.late += 1  # late events are never re-sent: their fate is their own
                else:
                    self._recent.append(event)
                    event = dict(event)
            truth.produced += 1
            if self.join is not None:
                self._left_ids.append(event["event_id"])
                self._left_keys.append(sys.intern(event["user"]["id"]))
                self._left_ms.append(_epoch_ms(event["created_at"]))
                self._make_right(truth.produced)
            yield event

    # ------------------------------------------------------------------ the join stream

    def _make_right(self, made: int) -> None:
        """The right messages due once `made` left messages were made (spread evenly)."""
        join = self.join
        assert join is not None
        due = made * join.right_events // join.left_events
        due -= (made - 1) * join.right_events // join.left_events
        rng = self._jrng
        for _ in range(due):
            if rng.random() < join.duplicates and self._jrecent:
                original = rng.choice(self._jrecent)
                original["attempt"] += 1
                event = dict(original)
                event["user"] = dict(original["user"])
            else:
                user = rng.choice(self._join_users)
                version = self._jversions[user] = self._jversions.get(user, 0) + 1
                when = self._clock_ms + rng.randint(-self._jitter_ms, self._jitter_ms)
                updated = _EPOCH + timedelta(milliseconds=when)
                event = {
                    "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "user": {
                        "id": f"u{user}",
                        "name": f"user {user}",
                        "plan": rng.choice(_PLANS),
                        "country": _COUNTRIES[user % len(_COUNTRIES)],
                    },
                    "version": version,
                    "updated_at": updated.isoformat(),
                    "attempt": 0,
                }
                self._jrecent.append(event)
                event = dict(event)
            self._right_ids.append(event["event_id"])
            self._right_keys.append(sys.intern(event["user"]["id"]))
            self._right_ms.append(_epoch_ms(event["updated_at"]))
            body = json.dumps(event, separators=(",", ":")).encode()
            pad = self.spec.payload_bytes - len(body) - len(b',"note":""')
            if pad > 0:
                body = body[:-1] + b',"note":"' + b"x" * pad + b'"}'
            self._jpending.append((made, event["event_id"].encode(), body))

    def right_events(self) -> list[dict]:
        """The right messages made so far and not sent, decoded (for tests; keeps them)."""
        return [json.loads(value) for _, _, value in getattr(self, "_jpending", ())]

    def join_truth(self) -> JoinTruth:
        """What an inner join of everything made so far must write (see `reference_join`)."""
        join = self.join
        if join is None:
            raise ValueError("no join stream: give the generator a JoinLoadSpec")
        return reference_join(
            zip(self._left_ids, self._left_keys, self._left_ms, strict=True),
            zip(self._right_ids, self._right_keys, self._right_ms, strict=True),
            join.left_window,
            join.right_window,
            join.dedup_window,
        )

    def _send_right(self, producer: Producer) -> int:
        """Hand over the right messages due by now (made alongside left messages sent)."""
        pending, topic, sent = self._jpending, self.join_topic, 0
        while pending and pending[0][0] <= self._left_sent:
            _, key, value = pending.popleft()
            while True:
                try:
                    producer.produce(
                        topic, value=value, key=key, on_delivery=self._on_join_delivery
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            sent += 1
        return sent

    def _on_join_delivery(self, err: Any, _msg: Any) -> None:
        if err is None:
            self._jacked += 1
        else:
            self._failed.append(str(err))

    def _encode(self, event: dict) -> tuple[bytes, bytes]:
        body = json.dumps(event, separators=(",", ":")).encode()
        # final size: body - "}" + ',"note":"' + pad + '"' + stamp key + 13 digits + "}"
        pad = self.spec.payload_bytes - len(body) - len(b',"note":""') - len(_STAMP_KEY) - 13
        if pad > 0:
            body = body[:-1] + b',"note":"' + b"x" * pad + b'"}'
        return event["event_id"].encode(), body[:-1] + _STAMP_KEY

    def prepare(self, n: int) -> Prepared:
        """Serialise the next `n` events ahead of a timed step (stamping happens on send)."""
        return [self._encode(e) for e in self.events(n)]

    # ------------------------------------------------------------------ sending

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is None:
            self._acked += 1
        else:
            self._failed.append(str(err))

    def send(
        self,
        messages: Prepared | int,
        rps: float | None,
        on_sample: Callable[[float, int, int], None] | None = None,
        sample_every_s: float = 0.25,
    ) -> SendReport:
        """Send prepared messages (or the next N events) at `rps` (None: as fast as possible).

        Returns once every message is acknowledged; the achieved rate counts acknowledged
        messages over the time from the first hand-over to the last acknowledgement.
        """
        if isinstance(messages, int):
            todo: Iterator[tuple[bytes, bytes]] = (self._encode(e) for e in self.events(messages))
            total = messages
        else:
            todo = iter(messages)
            total = len(messages)
        bucket = TokenBucket(rps) if rps else None
        producer = self._producer
        topic = self.topic
        acked_before = self._acked
        joined = self.join is not None
        join_acked_before = self._jacked if joined else 0
        join_sent = 0
        samples: list[tuple[float, int, int]] = []
        sent = 0
        started = time.time()
        t0 = time.monotonic()
        next_sample = t0
        while sent < total:
            grant = bucket.take(min(1000, total - sent)) if bucket else min(1000, total - sent)
            stamp = b"%d}" % int(time.time() * 1000)
            for _ in range(grant):
                key, head = next(todo)
                while True:
                    try:
                        producer.produce(
                            topic, value=head + stamp, key=key, on_delivery=self._on_delivery
                        )
                        break
                    except BufferError:
                        producer.poll(0.05)
            sent += grant
            if joined:
                self._left_sent += grant
                join_sent += self._send_right(producer)
            producer.poll(0)
            now = time.monotonic()
            if now >= next_sample:
                sample = (time.time(), sent, self._acked - acked_before)
                samples.append(sample)
                if on_sample:
                    on_sample(*sample)
                next_sample = now + sample_every_s
        while producer.flush(0.1) > 0:
            if time.monotonic() >= next_sample:
                samples.append((time.time(), sent, self._acked - acked_before))
                next_sample = time.monotonic() + sample_every_s
        ended = time.time()
        seconds = time.monotonic() - t0
        samples.append((ended, sent, self._acked - acked_before))
        if self._failed:
            raise RuntimeError(
                f"{len(self._failed)} messages were not delivered: {self._failed[0]}"
            )
        report = SendReport(rps, sent, self._acked - acked_before, seconds, started, ended, samples)
        if joined:
            report.join_sent = join_sent
            report.join_acked = self._jacked - join_acked_before
        return report

    def close(self) -> None:
        if self._producer_instance is not None:
            self._producer_instance.flush(30)

    def write_truth(self, path: Path, extra: dict[str, Any] | None = None) -> None:
        doc = {
            "topic": self.topic,
            "spec": {**asdict(self.spec), "late_by_s": self.spec.late_by.total_seconds()},
            **self.truth.as_dict(),
            **(extra or {}),
        }
        doc["spec"].pop("late_by")
        if self.join is not None:
            doc["join"] = {
                "topic": self.join_topic,
                "spec": self.join.as_dict(),
                "unmatched_users": len(self.join_unmatched_users),
                **self.join_truth().as_dict(),
            }
        Path(path).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
