"""`streamsift serve --alerts FILE`: a file that does not validate stops the server before it
listens, naming the field (exit code 2); an interval of 0 is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamsift.cli.main import main
from streamsift.sources.kafka_auth import PROVIDERS_ENV, REGISTERED_ONLY_ENV


@pytest.fixture(autouse=True)
def _environment_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` marks its process as a server's (registered token providers only): that must
    not outlive these tests, or later ones in the same process see a server's rules."""
    for name in (PROVIDERS_ENV, REGISTERED_ONLY_ENV):
        monkeypatch.setenv(name, os.environ.get(name, ""))


def test_a_wrong_alerts_file_is_named_by_its_field(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "alerts.yaml"
    bad.write_text("alerts:\n  lag: {longer_than: 1m}\n  webhooks: [{url: 'ftp://x/'}]\n")
    assert main(["serve", "--port", "0", "--data-dir", str(tmp_path), "--alerts", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "lag: above: required field is missing" in err
    assert "webhooks[0].url: scheme 'ftp' is not allowed" in err
    assert "webhooks[0].secret: required field is missing" in err
    assert "listening" not in err


@pytest.mark.parametrize("every", ["0", "-1"])
def test_the_alerts_interval_must_be_positive(tmp_path: Path, every: str, capsys) -> None:
    args = ["serve", "--port", "0", "--data-dir", str(tmp_path), "--alerts-interval", every]
    assert main(args) == 2
    assert "--alerts-interval must be above 0" in capsys.readouterr().err
