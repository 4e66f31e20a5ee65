"""`streamsift serve` flags refused before the server listens (exit code 2, the flag named):
a `--probe-timeout` (how long the connection helpers wait for a Kafka or ClickHouse) not above
0, an `--allowed-host` that is no host name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamsift.cli.main import main
from streamsift.sources.kafka_auth import PROVIDERS_ENV, REGISTERED_ONLY_ENV


@pytest.fixture(autouse=True)
def _environment_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` marks its process as a server's: that must not outlive these tests."""
    for name in (PROVIDERS_ENV, REGISTERED_ONLY_ENV):
        monkeypatch.setenv(name, os.environ.get(name, ""))


@pytest.mark.parametrize("seconds", ["0", "-2.5"])
def test_the_probe_timeout_must_be_positive(tmp_path: Path, seconds: str, capsys) -> None:
    args = ["serve", "--port", "0", "--data-dir", str(tmp_path), "--probe-timeout", seconds]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"--probe-timeout must be above 0, not {float(seconds)}" in err
    assert "listening" not in err


@pytest.mark.parametrize("bad", ["http://proxy.example/", "evil/x", "a..b"])
def test_an_allowed_host_that_is_no_host_name_is_refused_at_start(
    tmp_path: Path, bad: str, capsys
) -> None:
    args = ["serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--no-otlp"]
    assert main([*args, "--allowed-host", bad]) == 2
    err = capsys.readouterr().err
    assert f"--allowed-host takes a host name (or *), not {bad!r}" in err
    assert "listening" not in err
