"""One error hierarchy: every package's errors have a kind, and the CLI maps kinds once."""

from __future__ import annotations

import pytest

from streamsift.cli import exit_codes
from streamsift.config import ConfigError
from streamsift.engine.errors import (
    DlqNotFound,
    EmbeddedClickHouseBusy,
    PipelineFailed,
    ReplayConflict,
    ReplayUnsupported,
)
from streamsift.errors import RESUME_HINT, ErrorKind, StreamsiftError
from streamsift.service.errors import (
    ClickHouseRefused,
    ClickHouseUnreachable,
    ExpressionProblem,
    KafkaClientRefused,
    KafkaUnreachable,
    NotClickHouse,
    SecretKeyError,
    TokenProviderFailed,
)
from streamsift.sinks.errors import (
    SinkConfigError,
    SinkError,
    SinkPermanentError,
    SinkTransientError,
)
from streamsift.sources.errors import SourceError, SourceUnavailable
from streamsift.sources.otlp.decode import MalformedOtlp
from streamsift.spark_host.errors import RuntimeConfigError

KINDS = [
    (ConfigError("name: bad"), ErrorKind.CONFIGURATION, 2),
    (RuntimeConfigError("Java 17+ is needed"), ErrorKind.CONFIGURATION, 2),
    (ReplayUnsupported("joins cannot be replayed"), ErrorKind.CONFIGURATION, 2),
    (SourceUnavailable("Kafka at h:1 did not answer"), ErrorKind.TRANSIENT, 1),
    (SinkTransientError("ClickHouse did not answer"), ErrorKind.TRANSIENT, 1),
    (EmbeddedClickHouseBusy("locked"), ErrorKind.TRANSIENT, 1),
    (SourceError("topic 'x' does not exist"), ErrorKind.PERMANENT, 1),
    (SinkConfigError("table lacks the dedup window"), ErrorKind.PERMANENT, 1),
    (SinkPermanentError("Code: 60", code=60), ErrorKind.PERMANENT, 1),
    (PipelineFailed("the query failed"), ErrorKind.PERMANENT, 1),
    (ReplayConflict("changed"), ErrorKind.PERMANENT, 1),
    (DlqNotFound("no DLQ table", "run first"), ErrorKind.PERMANENT, 1),
    (SecretKeyError("not a Fernet key"), ErrorKind.CONFIGURATION, 2),
    (ExpressionProblem("expression: unknown column"), ErrorKind.CONFIGURATION, 2),
    (KafkaClientRefused("bad settings"), ErrorKind.CONFIGURATION, 2),
    (TokenProviderFailed("the provider raised"), ErrorKind.CONFIGURATION, 2),
    (MalformedOtlp("the body is not JSON"), ErrorKind.CONFIGURATION, 2),
    (KafkaUnreachable("Kafka at h:1 did not answer"), ErrorKind.TRANSIENT, 1),
    (ClickHouseUnreachable("ClickHouse at h:1 did not answer"), ErrorKind.TRANSIENT, 1),
    (ClickHouseRefused("ClickHouse refused"), ErrorKind.PERMANENT, 1),
    (NotClickHouse("not a ClickHouse"), ErrorKind.PERMANENT, 1),
]


@pytest.mark.parametrize(("error", "kind", "code"), KINDS, ids=[type(k[0]).__name__ for k in KINDS])
def test_every_error_has_a_kind_and_one_exit_code(
    error: StreamsiftError, kind: ErrorKind, code: int, capsys: pytest.CaptureFixture
) -> None:
    assert isinstance(error, StreamsiftError)
    assert error.kind is kind
    assert exit_codes.report(error) == code
    err = capsys.readouterr().err
    assert error.message.split(":")[0] in err


def test_hints_default_by_kind_and_can_be_given() -> None:
    assert SinkTransientError("down").hint == RESUME_HINT
    assert PipelineFailed("failed").hint == RESUME_HINT
    assert ConfigError("x: bad").hint is None
    assert PipelineFailed("failed", "run with --verbose").hint == "run with --verbose"
    assert SinkError("base").hint is None


def test_config_errors_print_one_line_per_problem(capsys: pytest.CaptureFixture) -> None:
    assert exit_codes.report(ConfigError(["a: bad", "b: worse"], source="p.yaml")) == 2
    assert capsys.readouterr().err == "p.yaml: a: bad\np.yaml: b: worse\n"


def test_other_errors_print_a_line_and_a_hint(capsys: pytest.CaptureFixture) -> None:
    exit_codes.report(SourceUnavailable("Kafka at 127.0.0.1:1 did not answer"))
    assert capsys.readouterr().err == (
        f"error: Kafka at 127.0.0.1:1 did not answer\nhint: {RESUME_HINT}\n"
    )


def test_the_fault_hook_is_read_once_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamsift.engine.faults import KillAfterInserts, fault_from_environment

    monkeypatch.delenv("STREAMSIFT_FAULT", raising=False)
    assert fault_from_environment(driver_pid=1) is None
    monkeypatch.setenv("STREAMSIFT_FAULT", "kill_after_insert:3")
    assert fault_from_environment(driver_pid=7) == KillAfterInserts(3, 7)
    monkeypatch.setenv("STREAMSIFT_FAULT", "kill_after_inserts:3")
    with pytest.raises(RuntimeConfigError, match="not a fault this build knows"):
        fault_from_environment(driver_pid=7)
