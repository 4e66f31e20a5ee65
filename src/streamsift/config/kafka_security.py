"""How a pipeline authenticates to Kafka, as users' clusters have it, mapped to librdkafka.

Protocols PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL; SASL mechanisms PLAIN, SCRAM-SHA-256/512,
GSSAPI (Kerberos: principal + keytab) and OAUTHBEARER (OIDC client credentials fetched by
librdkafka, or a token callback such as AWS MSK IAM); TLS with a CA, a client certificate and
key (mutual TLS, with or without SASL), or no verification at all. Secrets are `SecretStr`
(masked in reprs, API answers and logs, encrypted at rest by the service).

A few settings are not librdkafka properties but instructions to the Kafka reader
(`sources/kafka_auth.py`), carried beside them under the `streamsift.` prefix: a keytab or
krb5.conf given inline (GlassFlow keeps them in the pipeline), and a token callback's name.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path

from pydantic import Field, SecretStr, model_validator

from streamsift.config.base import ConfigModel
from streamsift.config.kafka_properties import (
    AWS_MSK_IAM,
    KEYTAB_BASE64,
    KRB5_CONFIG_PATH,
    KRB5_CONFIG_TEXT,
    TOKEN_PROVIDER,
)

_CALLABLE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_PROVIDER_NAME = re.compile(r"[A-Za-z][\w.-]{0,63}")


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"
    SSL = "SSL"


class SaslMechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
    GSSAPI = "GSSAPI"
    OAUTHBEARER = "OAUTHBEARER"


_PASSWORD_MECHANISMS = (
    SaslMechanism.PLAIN,
    SaslMechanism.SCRAM_SHA_256,
    SaslMechanism.SCRAM_SHA_512,
)
_TLS = (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


class Kerberos(ConfigModel):
    """SASL GSSAPI: who we are (`principal`, from a keytab) and the brokers' service name."""

    principal: str = Field(min_length=1)
    keytab: Path | None = None
    keytab_base64: SecretStr | None = None  # the keytab itself, base64 (as GlassFlow keeps it)
    service_name: str = Field(default="kafka", min_length=1)
    krb5_config: Path | None = None  # krb5.conf; default: the system's (/etc/krb5.conf)
    krb5_config_text: str | None = None  # krb5.conf's content

    @model_validator(mode="after")
    def _check(self) -> Kerberos:
        if (self.keytab is None) == (self.keytab_base64 is None):
            raise ValueError("give the keytab as a file (keytab) or inline (keytab_base64)")
        if self.krb5_config is not None and self.krb5_config_text is not None:
            raise ValueError("give krb5_config (a file) or krb5_config_text, not both")
        return self

    def librdkafka(self) -> dict[str, str]:
        props = {
            "sasl.kerberos.service.name": self.service_name,
            "sasl.kerberos.principal": self.principal,
        }
        if self.keytab is not None:
            props["sasl.kerberos.keytab"] = str(self.keytab)
        if self.keytab_base64 is not None:
            props[KEYTAB_BASE64] = self.keytab_base64.get_secret_value()
        if self.krb5_config is not None:
            props[KRB5_CONFIG_PATH] = str(self.krb5_config)
        if self.krb5_config_text is not None:
            props[KRB5_CONFIG_TEXT] = self.krb5_config_text
        return props


class OAuthBearer(ConfigModel):
    """SASL OAUTHBEARER: OIDC client credentials (librdkafka fetches and refreshes the token),
    or a token callback: `aws_msk_iam` (AWS MSK IAM, `args: {region: ...}`), the name of a
    provider the operator registered, or (the CLI only) your own
    `package.module:function(args) -> (token, expiry_unix_seconds)`."""

    token_endpoint_url: str | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None
    scope: str | None = None
    extensions: dict[str, str] = Field(default_factory=dict)
    token_provider: str | None = None
    args: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> OAuthBearer:
        oidc = any(
            v is not None
            for v in (self.token_endpoint_url, self.client_id, self.client_secret, self.scope)
        )
        if oidc == (self.token_provider is not None):
            raise ValueError(
                "give either OIDC client credentials (token_endpoint_url, client_id, "
                "client_secret) or a token_provider (aws_msk_iam or package.module:function)"
            )
        if oidc:
            missing = [
                k
                for k in ("token_endpoint_url", "client_id", "client_secret")
                if getattr(self, k) is None
            ]
            if missing:
                raise ValueError(f"OIDC needs {', '.join(missing)}")
        elif not (
            _PROVIDER_NAME.fullmatch(self.token_provider or "")
            or _CALLABLE.fullmatch(self.token_provider or "")
        ):
            raise ValueError(
                f"token_provider {self.token_provider!r} is neither aws_msk_iam, a registered "
                "provider's name nor package.module:function"
            )
        if self.token_provider == AWS_MSK_IAM and not self.args.get("region"):
            raise ValueError("aws_msk_iam needs args.region (the MSK cluster's AWS region)")
        return self

    def librdkafka(self) -> dict[str, str]:
        if self.token_provider is not None:
            return {
                TOKEN_PROVIDER: self.token_provider,
                "sasl.oauthbearer.config": json.dumps(self.args, sort_keys=True),
            }
        props = {
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": self.token_endpoint_url or "",
            "sasl.oauthbearer.client.id": self.client_id or "",
            "sasl.oauthbearer.client.secret": (
                self.client_secret.get_secret_value() if self.client_secret else ""
            ),
        }
        if self.scope:
            props["sasl.oauthbearer.scope"] = self.scope
        if self.extensions:
            props["sasl.oauthbearer.extensions"] = ",".join(
                f"{k}={v}" for k, v in sorted(self.extensions.items())
            )
        return props


class KafkaSecurity(ConfigModel):
    """How to authenticate to Kafka; passed through to librdkafka. Secrets are never logged."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    mechanism: SaslMechanism | None = None
    username: str | None = None
    password: SecretStr | None = None
    kerberos: Kerberos | None = None
    oauthbearer: OAuthBearer | None = None
    ca_file: Path | None = None
    ca_pem: str | None = None
    client_cert_file: Path | None = None
    client_key_file: Path | None = None
    client_cert_pem: str | None = None
    client_key_pem: SecretStr | None = None
    client_key_password: SecretStr | None = None
    skip_tls_verification: bool = False

    @model_validator(mode="after")
    def _check(self) -> KafkaSecurity:
        protocol = self.protocol.value
        sasl = self.protocol in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
        mechanism = self.mechanism
        if sasl and mechanism is None:
            raise ValueError(f"mechanism is required with protocol {protocol}")
        if not sasl and mechanism is not None:
            raise ValueError(
                f"mechanism {mechanism.value} needs protocol SASL_PLAINTEXT or SASL_SSL"
            )
        if mechanism in _PASSWORD_MECHANISMS:
            if not self.username:
                raise ValueError(f"username is required with protocol {protocol}")
            if self.password is None or not self.password.get_secret_value():
                raise ValueError(f"password is required with protocol {protocol}")
        elif self.password is not None and mechanism is not None:
            raise ValueError(f"password is not used with mechanism {mechanism.value}; remove it")
        if (mechanism is SaslMechanism.GSSAPI) != (self.kerberos is not None):
            raise ValueError(
                "kerberos (principal, keytab) goes with mechanism GSSAPI, and GSSAPI needs it"
            )
        if (mechanism is SaslMechanism.OAUTHBEARER) != (self.oauthbearer is not None):
            raise ValueError(
                "oauthbearer (OIDC credentials or a token_provider) goes with mechanism "
                "OAUTHBEARER, and OAUTHBEARER needs it"
            )
        cert = (self.client_cert_file, self.client_cert_pem)
        key = (self.client_key_file, self.client_key_pem)
        if any(v is not None for v in cert + key) and self.protocol not in _TLS:
            raise ValueError(
                f"a client certificate (mutual TLS) needs protocol SSL or SASL_SSL, not {protocol}"
            )
        if all(v is not None for v in cert) or all(v is not None for v in key):
            raise ValueError("give the client certificate and key as files or as PEM, not both")
        if any(v is not None for v in cert) != any(v is not None for v in key):
            raise ValueError("mutual TLS needs both the client certificate and its key")
        if self.ca_file is not None and self.ca_pem is not None:
            raise ValueError("give the CA as ca_file or ca_pem, not both")
        return self

    def librdkafka(self) -> dict[str, str]:
        """The librdkafka properties for this security setting (holds the secret: never log it)."""
        props = {"security.protocol": self.protocol.value}
        if self.mechanism is not None:
            props["sasl.mechanism"] = self.mechanism.value
        if self.mechanism in _PASSWORD_MECHANISMS:
            props["sasl.username"] = self.username or ""
            props["sasl.password"] = self.password.get_secret_value() if self.password else ""
        if self.kerberos is not None:
            props.update(self.kerberos.librdkafka())
        if self.oauthbearer is not None:
            props.update(self.oauthbearer.librdkafka())
        optional = {
            "ssl.ca.location": self.ca_file,
            "ssl.ca.pem": self.ca_pem,
            "ssl.certificate.location": self.client_cert_file,
            "ssl.key.location": self.client_key_file,
            "ssl.certificate.pem": self.client_cert_pem,
            "ssl.key.pem": self.client_key_pem,
            "ssl.key.password": self.client_key_password,
        }
        for prop, value in optional.items():
            if value is not None:
                text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
                props[prop] = text
        if self.skip_tls_verification:
            props["enable.ssl.certificate.verification"] = "false"
            props["ssl.endpoint.identification.algorithm"] = "none"
        return props

    def describe(self) -> str:
        """The protocol and mechanism, for messages (no secrets)."""
        text = self.protocol.value
        if self.mechanism is not None:
            text += f"/{self.mechanism.value}"
        if self.client_cert_file is not None or self.client_cert_pem is not None:
            text += " with a client certificate"
        return text

    def secrets(self) -> list[str]:
        """Every secret value this setting holds (for masking in texts that may echo them)."""
        found = [
            self.password,
            self.client_key_pem,
            self.client_key_password,
            self.kerberos.keytab_base64 if self.kerberos else None,
            self.oauthbearer.client_secret if self.oauthbearer else None,
        ]
        return [s.get_secret_value() for s in found if s is not None and s.get_secret_value()]


def is_secret_property(name: str) -> bool:
    """Whether a librdkafka property (given in `source.properties`) holds a secret."""
    lower = name.lower()
    return any(w in lower for w in ("password", "secret", "key.pem", "keytab.base64"))
