"""The service's rules for documents (service/document_policy.py) and the token provider
registry (sources/kafka_auth.py), as pure logic beside the server tests in tests/security."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamsift.config.errors import ConfigError
from streamsift.config.kafka_security import KafkaSecurity
from streamsift.service.document_policy import DocumentPolicy
from streamsift.sources import kafka_auth


def test_paths_resolve_dots_and_links_before_the_check(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "out").symlink_to(tmp_path)
    policy = DocumentPolicy(data)
    assert policy.inside(data / "a" / "b")
    assert policy.inside(data)
    assert not policy.inside(data / ".." / "x")
    assert not policy.inside(data / "out" / "x")
    assert not policy.inside(Path("/"))
    assert DocumentPolicy(data, allow_paths=(tmp_path,)).inside(data / "out" / "x")


def test_relative_paths_are_the_data_dirs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    policy = DocumentPolicy(data)
    assert policy.inside(Path("clickhouse"))
    assert not policy.inside(Path("../elsewhere"))
    doc = {
        "runtime": {"checkpoint_dir": "ck", "state_location": "s3://bucket/x"},
        "sink": {"clickhouse": {"path": "clickhouse"}},
        "sources": [
            {"security": {"ca_file": "/etc/ca.pem", "kerberos": {"keytab": "k.keytab"}}},
            {"properties": {"ssl.keystore.location": "ks.p12", "fetch.max.bytes": "9"}},
        ],
    }
    anchored = policy.anchored_document(doc)
    assert anchored["runtime"] == {
        "checkpoint_dir": str(data / "ck"),
        "state_location": "s3://bucket/x",
    }
    assert anchored["sink"]["clickhouse"]["path"] == str(data / "clickhouse")
    assert anchored["sources"][0]["security"]["ca_file"] == "/etc/ca.pem"
    assert anchored["sources"][0]["security"]["kerberos"]["keytab"] == str(data / "k.keytab")
    assert anchored["sources"][1]["properties"] == {
        "ssl.keystore.location": str(data / "ks.p12"),
        "fetch.max.bytes": "9",
    }
    assert doc["sink"]["clickhouse"]["path"] == "clickhouse"  # the caller's copy untouched
    assert policy.anchored_document({"sink": "not a mapping", "sources": 3}) == {
        "sink": "not a mapping",
        "sources": 3,
    }


def test_a_sibling_with_a_common_prefix_is_outside(tmp_path: Path) -> None:
    assert not DocumentPolicy(tmp_path / "data").inside(tmp_path / "data-other" / "x")


@pytest.mark.parametrize(
    "key, allowed",
    [
        ("spark.sql.shuffle.partitions", True),
        ("spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB", True),
        ("spark.sql.streaming.stateStore.rocksdb.loaderClass", False),
        ("spark.sql.streaming.stateStore.providerClass", False),
        ("spark.driver.extraJavaOptions", False),
        ("spark.driver.extraClassPath", False),
        ("spark.jars", False),
        ("spark.python.worker.reuse", False),
        ("spark.executorEnv.PYTHONPATH", False),
        ("spark.sql.shuffle.partitions.x", False),
    ],
)
def test_spark_keys(key: str, allowed: bool, tmp_path: Path) -> None:
    assert DocumentPolicy(tmp_path).spark_key_allowed(key) is allowed


def test_the_operator_widens_the_spark_keys(tmp_path: Path) -> None:
    policy = DocumentPolicy(tmp_path, allow_spark_conf=("spark.hadoop.*", "spark.jars"))
    assert policy.spark_key_allowed("spark.hadoop.fs.s3a.endpoint")
    assert policy.spark_key_allowed("spark.jars")
    assert not policy.spark_key_allowed("spark.driver.extraJavaOptions")


def test_a_provider_by_module_is_refused_by_the_policy(tmp_path: Path) -> None:
    security = KafkaSecurity.model_validate(
        {
            "protocol": "SASL_SSL",
            "mechanism": "OAUTHBEARER",
            "oauthbearer": {"token_provider": "os:system"},
        }
    )
    with pytest.raises(ConfigError) as caught:
        DocumentPolicy(tmp_path).check_security(security, "source.security")
    assert caught.value.problems[0].startswith("source.security.oauthbearer.token_provider:")


def fake_token(args: dict[str, str]) -> tuple[str, float]:
    return f"token-for-{args.get('who', '?')}", 100.0


def test_registered_providers_resolve_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kafka_auth.PROVIDERS_ENV, f"corp={__name__}:fake_token, bad-entry")
    assert kafka_auth.registered_providers()["corp"] == f"{__name__}:fake_token"
    assert kafka_auth.resolve_provider("corp")({"who": "me"}) == ("token-for-me", 100.0)


def test_only_registered_providers_in_a_server_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(kafka_auth.PROVIDERS_ENV, raising=False)
    assert kafka_auth.resolve_provider(f"{__name__}:fake_token") is fake_token  # the CLI
    monkeypatch.setenv(kafka_auth.REGISTERED_ONLY_ENV, "1")
    with pytest.raises(ConfigError, match="registered"):
        kafka_auth.resolve_provider(f"{__name__}:fake_token")
    with pytest.raises(ConfigError, match="not a registered token provider"):
        kafka_auth.resolve_provider("nobody")


@pytest.mark.parametrize("name", ["corp", "aws_msk_iam", "pkg.mod:fn", "a-b.c"])
def test_provider_names_the_config_accepts(name: str) -> None:
    region = {"region": "eu-west-1"} if name == "aws_msk_iam" else {}
    KafkaSecurity.model_validate(
        {
            "protocol": "SASL_SSL",
            "mechanism": "OAUTHBEARER",
            "oauthbearer": {"token_provider": name, "args": region},
        }
    )


@pytest.mark.parametrize("name", ["os:system\n", "x y", "a:b:c", "", "1abc"])
def test_provider_names_the_config_refuses(name: str) -> None:
    with pytest.raises(ValueError):
        KafkaSecurity.model_validate(
            {
                "protocol": "SASL_SSL",
                "mechanism": "OAUTHBEARER",
                "oauthbearer": {"token_provider": name},
            }
        )
