"""Deduplication of Kafka records, owned here whole.

`rule.DedupRule` is what the source processor (engine/processor.py) applies to each
partition's offset range; `keys` says what each mode compares, `partition.PartitionDedup`
decides (replay-safe), `layout` names where state lives, `shared_state` keeps it on shared
storage with a local RocksDB cache, and `carry_over` (driver only) picks the shared location
and carries a local run's state there. Submodules are imported by name: executors load only
what they run.
"""
