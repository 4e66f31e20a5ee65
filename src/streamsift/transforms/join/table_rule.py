"""The rule of `join.mode: table` for one join key, as a pure function of its state.

The right topic is a table (a compacted topic: users, products): its key's value is the
right record written last (highest Kafka position), until a tombstone (a null value) deletes
it or, with `join.right.ttl`, until the watermark passes the value's event time + ttl. Each
left record is joined once, with its key's value as it stands after the right records of
its micro-batch (processing order, not as-of its event time). A left record whose key has no
value waits for the first micro-batch in which it has one, until the watermark passes
`tl + left.time_window`; then it expires (a left join writes it with NULL right fields).
docs/semantics.md has the timeline.

As in `latest_rule`, the result depends only on the key's state, the micro-batch's
records (in any order) and its watermark, so a re-run micro-batch makes the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamsift.transforms.join.latest_rule import Record, Step


@dataclass(frozen=True)
class TableRule:
    """`left.time_window` and `right.ttl` (None: values stay until a tombstone), in µs."""

    left_us: int
    ttl_us: int | None = None

    def __call__(
        self,
        rights: tuple[Record, ...],
        lefts: tuple[Record, ...],
        new_rights: list[Record],
        new_tombstones: list[Record],
        new_lefts: list[Record],
        watermark_us: int,
        key_is_null: bool = False,
    ) -> Step:
        return table_step(
            rights[0] if rights else None,
            lefts,
            new_rights,
            new_tombstones,
            new_lefts,
            watermark_us,
            self,
            key_is_null,
        )


def current_value(
    value: Record | None,
    new_rights: list[Record],
    new_tombstones: list[Record],
    watermark_us: int,
    ttl_us: int | None,
) -> Record | None:
    """The key's value after a batch's right records: the one written last (by partition,
    then offset) unless that is a tombstone, or its time + ttl is at or behind the watermark."""
    updates = [(r.partition, r.offset, False, r) for r in new_rights]
    updates += [(r.partition, r.offset, True, r) for r in new_tombstones]
    if updates:
        _, _, deleted, last = max(updates, key=lambda u: (u[0], u[1]))
        value = None if deleted else last
    if value is not None and ttl_us is not None and value.et + ttl_us <= watermark_us:
        return None
    return value


def table_step(
    value: Record | None,
    lefts: tuple[Record, ...],
    new_rights: list[Record],
    new_tombstones: list[Record],
    new_lefts: list[Record],
    watermark_us: int,
    rule: TableRule,
    key_is_null: bool = False,
) -> Step:
    """Join a key's waiting and new left records with its value after this batch.

    `value`/`lefts` are the state as of the batch's start. A NULL key never matches: it keeps
    no value, its left records wait and expire. The state is the value (if any) and the
    waiting left records; the wake-up is the first waiting record's window end or the value's
    expiry, whichever comes first (None: nothing to wake for, the value stays as it is).
    """
    if key_is_null:
        value, new_rights, new_tombstones = None, [], []
    value = current_value(value, new_rights, new_tombstones, watermark_us, rule.ttl_us)
    pending = sorted({*lefts, *new_lefts}, key=lambda r: (r.et, r.partition, r.offset))
    matched: tuple[tuple[Record, Record], ...] = ()
    expired: list[Record] = []
    waiting: list[Record] = []
    if value is not None:
        matched = tuple((left, value) for left in pending)
    else:
        for left in pending:
            (expired if left.et + rule.left_us <= watermark_us else waiting).append(left)
    wakes = [min(r.et for r in waiting) + rule.left_us] if waiting else []
    if value is not None and rule.ttl_us is not None:
        wakes.append(value.et + rule.ttl_us)
    return Step(
        matched,
        tuple(expired),
        (value,) if value is not None else (),
        tuple(waiting),
        min(wakes) if wakes else None,
    )
