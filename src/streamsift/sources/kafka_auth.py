"""The parts of Kafka authentication that are not plain librdkafka properties.

The pipeline's security settings (config/kafka_security.py) carry a few instructions beside
the librdkafka properties, under the `streamsift.` prefix; here, where a client is made (on
the driver or an executor), they become what librdkafka needs:
- an inline keytab (base64) is written to a private file (0600) and named in
  `sasl.kerberos.keytab`; an inline krb5.conf likewise, and `KRB5_CONFIG` points to it (the
  Kerberos library reads the environment: this is process-wide);
- a token provider becomes confluent-kafka's `oauth_cb`: `aws_msk_iam` signs an AWS MSK IAM
  token (package `aws-msk-iam-sasl-signer-python`, installed by the user); a name the operator
  registered (`STREAMSIFT_TOKEN_PROVIDERS=name=module:function,...`, which `streamsift serve
  --token-provider` sets for its workers, or an entry point of the group
  `streamsift.token_providers`) is that function; and, only where the user runs their own
  files (the CLI), `package.module:function` itself. Each is called as
  `function(args) -> (token, expiry_unix_seconds)`.

A process started by `streamsift serve` (the server and the workers it starts, which inherit
its environment) has STREAMSIFT_REGISTERED_PROVIDERS_ONLY=1: there a document can name only a
registered provider, never a module to import.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamsift.config.kafka_properties import (
    AWS_MSK_IAM,
    KEYTAB_BASE64,
    KRB5_CONFIG_PATH,
    KRB5_CONFIG_TEXT,
    TOKEN_PROVIDER,
)
from streamsift.sources.errors import SourceError

TokenProvider = Callable[[dict[str, str]], tuple[str, float]]
PROVIDERS_ENV = "STREAMSIFT_TOKEN_PROVIDERS"
REGISTERED_ONLY_ENV = "STREAMSIFT_REGISTERED_PROVIDERS_ONLY"
PROVIDERS_ENTRY_POINTS = "streamsift.token_providers"
# librdkafka's words for a broker refusing our authentication or TLS handshake
_REFUSAL_WORDS = ("SASL", "SSL handshake", "authentication", "Authentication")


class AuthRefusals:
    """An `error_cb` that keeps the last refusal of our authentication or TLS handshake."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self, error: Any) -> None:
        from confluent_kafka import KafkaError

        text = error.str()
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL) or any(
            w in text for w in _REFUSAL_WORDS
        ):
            self.reason = text.split(": ", 1)[-1] if "://" in text else text


def describe_security(props: dict[str, Any]) -> str:
    """The protocol and mechanism of a client's properties (no secrets), for messages."""
    text = f"security.protocol {props.get('security.protocol', 'PLAINTEXT')}"
    if props.get("sasl.mechanism"):
        text += f", sasl.mechanism {props['sasl.mechanism']}"
    if props.get("ssl.certificate.location") or props.get("ssl.certificate.pem"):
        text += ", a client certificate"
    return text


def client_config(conf: dict[str, Any]) -> dict[str, Any]:
    """`conf` with the `streamsift.` instructions carried out (a new dict)."""
    out = dict(conf)
    keytab = out.pop(KEYTAB_BASE64, None)
    if keytab is not None:
        out["sasl.kerberos.keytab"] = str(_private_file(base64.b64decode(keytab), ".keytab"))
    krb5_path = out.pop(KRB5_CONFIG_PATH, None)
    krb5_text = out.pop(KRB5_CONFIG_TEXT, None)
    if krb5_text is not None:
        krb5_path = str(_private_file(krb5_text.encode(), ".krb5.conf"))
    if krb5_path is not None:
        os.environ["KRB5_CONFIG"] = krb5_path
    provider = out.pop(TOKEN_PROVIDER, None)
    if provider is not None:
        out["oauth_cb"] = token_callback(provider)
    return out


def token_callback(name: str) -> Callable[[str], tuple[str, float]]:
    """confluent-kafka's `oauth_cb` for a token provider name; it gets the JSON of the
    provider's `args` (librdkafka's `sasl.oauthbearer.config`)."""
    provider = resolve_provider(name)

    def oauth_cb(config: str) -> tuple[str, float]:
        args = json.loads(config) if config else {}
        token, expiry = provider(args)
        return token, float(expiry)

    return oauth_cb


def resolve_provider(name: str) -> TokenProvider:
    """The function a token provider name stands for (see the module docstring)."""
    if name == AWS_MSK_IAM:
        return aws_msk_iam_token
    registered = registered_providers()
    if name in registered:
        return _import(registered[name], name)
    if ":" in name and os.environ.get(REGISTERED_ONLY_ENV) != "1":
        return _import(name, name)
    how = (
        "the service runs only providers the operator registered: register it with "
        f"streamsift serve --token-provider NAME={name} and name NAME"
        if ":" in name
        else f"register it with streamsift serve --token-provider {name}=MODULE:FUNCTION"
    )
    from streamsift.config.errors import ConfigError  # not at import: executors load this

    raise ConfigError(
        [
            f"source.security.oauthbearer.token_provider: {name!r} is not a registered "
            f"token provider (registered: {', '.join(sorted(registered)) or 'none'}); {how}"
        ]
    )


def registered_providers() -> dict[str, str]:
    """Token providers the operator registered, name -> `module:function`: the entry points
    of the group `streamsift.token_providers`, then STREAMSIFT_TOKEN_PROVIDERS (which wins)."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group=PROVIDERS_ENTRY_POINTS)}
    for entry in os.environ.get(PROVIDERS_ENV, "").split(","):
        name, sep, target = entry.strip().partition("=")
        if sep and name.strip() and target.strip():
            found[name.strip()] = target.strip()
    return found


def aws_msk_iam_token(args: dict[str, str]) -> tuple[str, float]:
    """An AWS MSK IAM auth token for `args["region"]`, signed with the process's AWS
    credentials (environment, profile or instance role)."""
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # type: ignore[import-not-found]
    except ImportError:
        raise SourceError(
            "source.security.oauthbearer.token_provider aws_msk_iam needs the package "
            "aws-msk-iam-sasl-signer-python: pip install aws-msk-iam-sasl-signer-python"
        ) from None
    token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(args["region"])
    return token, expiry_ms / 1000


def _import(target: str, name: str) -> TokenProvider:
    module_name, _, attr = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise SourceError(
            f"source.security.oauthbearer.token_provider: cannot load {name!r}: {exc}"
        ) from None
    if not callable(found):
        raise SourceError(f"source.security.oauthbearer.token_provider: {name!r} is not callable")
    return found  # type: ignore[no-any-return]


def _private_file(content: bytes, suffix: str) -> Path:
    """`content` in a file only this user can read, named by its hash (written once)."""
    folder = Path(tempfile.gettempdir()) / f"streamsift-kafka-auth-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / (hashlib.sha256(content).hexdigest()[:32] + suffix)
    if not path.exists():
        fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(content)
        path.with_suffix(".tmp").replace(path)
    return path
