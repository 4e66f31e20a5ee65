"""A short run of the kill -9 harness (the full one: `streamsift chaos --kills 20`)."""

from __future__ import annotations

import pytest

from streamsift.testing.chaos import ChaosOptions, run_chaos

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["embedded", "server"])
def test_three_random_kills_lose_and_double_nothing(tmp_path, mode):
    report = run_chaos(
        ChaosOptions(
            kills=3, events=12_000, mode=mode, min_up_s=5, max_up_s=16, seed=3, work_dir=tmp_path
        ),
        log=lambda _line: None,
    )
    assert report.kills == 3
    assert report.missing == 0
    assert report.duplicated == 0
    assert report.wrong_version == 0
    assert report.in_clickhouse == report.expected > 0
    assert report.dlq_in_clickhouse == report.dlq_expected > 0
