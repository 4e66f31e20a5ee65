"""The cache of packed environments keeps what was used recently, whoever built it."""

from __future__ import annotations

import os
import time

from streamsift.spark_host.environment import _prune


def _archive(tmp_path, name: str, used_hours_ago: float):
    path = tmp_path / f"streamsift-env-{name}.tar.gz"
    path.write_bytes(b"x")
    when = time.time() - used_hours_ago * 3600
    os.utime(path, (when, when))
    return path


def test_archives_beyond_the_kept_ones_go_only_when_unused_for_a_day(tmp_path):
    old = _archive(tmp_path, "old", 48)  # unused for two days: goes
    other = _archive(tmp_path, "other", 2)  # another checkout's, used 2 h ago: stays
    kept = [_archive(tmp_path, f"k{i}", 1 - i / 10) for i in range(3)]
    _prune(tmp_path, keep=3)
    assert not old.exists()
    assert other.exists() and all(k.exists() for k in kept)
