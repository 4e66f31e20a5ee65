"""Alert rules and where alerts go: a pipeline document's `alerts:` section, and the same
shape in the file `streamsift serve --alerts FILE` reads for every pipeline.

    alerts:
      failed: true                          # the pipeline is Failed
      retrying: {longer_than: 5m}           # Retrying for longer than that
      lag: {above: 10000, longer_than: 1m}  # messages not yet read, above the bound that long
      dlq_growth: {by: 100, within: 10m}    # the DLQ count rose by at least `by` in `within`
      webhooks: [{url: https://..., secret: ...}]
      slack: [{webhook_url: https://hooks.slack.com/services/...}]
      email: [{host: smtp.example.com, port: 587, from: a@example.com, to: [ops@example.com]}]

A rule is `true` (its defaults; `lag` needs `above`), its settings, or `false` (or
`enabled: false`): off, also when the server's file has it. A pipeline's rule replaces the server's rule for the same
condition; channels add up (the server's and the pipeline's all hear of the pipeline's
alerts): `merged`. The webhook secret, the SMTP password and the Slack URL (a credential in
itself) are `SecretStr`: sealed at rest, masked in answers (config/secrets.py). Pure: the
service checks where a document may send (service/document_policy.py) and sends.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from streamsift.config.base import ConfigModel, Duration, shorten
from streamsift.config.errors import ConfigError, format_validation_error
from streamsift.config.secrets import MASK

CONDITIONS = ("failed", "retrying", "lag", "dlq_growth")
# scheme://host[:port][/...]: the host part is what the service checks (document_policy.py)
_HTTP_URL = re.compile(r"\Ahttps?://[^/\s?#@]+(?:[/?#]\S*)?\Z", re.IGNORECASE)
_ADDRESS = re.compile(r"\A[^@\s<>,;]+@[^@\s<>,;]+\Z")
_HOST = re.compile(r"\A[A-Za-z0-9_.:\[\]-]+\Z")


def _on_off(value: Any) -> Any:
    """`true` is the rule with its defaults, `false` the rule turned off."""
    if value is True:
        return {}
    if value is False:
        return {"enabled": False}
    if value is None or isinstance(value, (dict, Rule)):
        return value
    raise ValueError("use true, false or the rule's settings (a mapping)")


def check_http_url(value: str, secret: bool = False) -> str:
    """An http(s) URL with a host and no user:password part, else ValueError (a `secret`
    URL is not repeated in the message)."""
    text = value.strip()
    if not _HTTP_URL.match(text):
        scheme = text.split("://", 1)[0] if "://" in text else ""
        if scheme and scheme.lower() not in ("http", "https"):
            raise ValueError(f"scheme {shorten(scheme, 10)} is not allowed: use http or https")
        shown = "(not shown: it is a secret)" if secret else shorten(text, 40)
        raise ValueError(f"not an http(s) URL with a host and no user:password@ part: {shown}")
    return text


# ---------------------------------------------------------------------------- rules


class Rule(ConfigModel):
    """A condition's rule; `enabled: false` (or the rule written as `false`) turns it off,
    also when the server's file has it."""

    enabled: bool = True


class FailedRule(Rule):
    """Alert while the pipeline is Failed (resolved once it runs again, or is stopped or
    deleted)."""


class RetryingRule(Rule):
    """Alert when the pipeline has been Retrying for longer than `longer_than`."""

    longer_than: Duration = timedelta(minutes=5)


class LagRule(Rule):
    """Alert when a running pipeline's lag (messages in Kafka not yet read, all partitions)
    has been above `above` for at least `longer_than`."""

    above: int | None = Field(default=None, ge=0)
    longer_than: Duration = timedelta(0)

    @model_validator(mode="after")
    def _bound(self) -> LagRule:
        if self.enabled and self.above is None:
            raise ValueError("above: required field is missing (the lag bound, in messages)")
        return self


class DlqGrowthRule(Rule):
    """Alert when the pipeline's dead letters rose by at least `by` within `within`."""

    by: int = Field(default=1, ge=1)
    within: Duration = timedelta(minutes=10)

    @field_validator("within")
    @classmethod
    def _positive(cls, v: timedelta) -> timedelta:
        if v <= timedelta(0):
            raise ValueError("must be greater than zero")
        return v


# ---------------------------------------------------------------------------- channels


class WebhookChannel(ConfigModel):
    """POST a JSON body to `url`, signed with HMAC-SHA256 over `<timestamp>.<body>` by
    `secret` (headers X-Streamsift-Timestamp and X-Streamsift-Signature: sha256=<hex>)."""

    url: str
    secret: SecretStr
    timeout: Duration = timedelta(seconds=10)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return check_http_url(v)

    @field_validator("secret")
    @classmethod
    def _secret(cls, v: SecretStr) -> SecretStr:
        if not v.get_secret_value().strip():
            raise ValueError("must not be empty: receivers check the signature with it")
        return v


class SlackChannel(ConfigModel):
    """POST `{"text": ...}` to a Slack incoming webhook (its URL is a credential: secret)."""

    webhook_url: SecretStr
    timeout: Duration = timedelta(seconds=10)

    @field_validator("webhook_url")
    @classmethod
    def _url(cls, v: SecretStr) -> SecretStr:
        if v.get_secret_value() != MASK:  # sent back masked: an edit keeps the stored one
            check_http_url(v.get_secret_value(), secret=True)
        return v


class EmailChannel(ConfigModel):
    """Mail through an SMTP server: STARTTLS (default), implicit TLS (`ssl`) or none;
    login when `username` is given (never over an unencrypted connection)."""

    host: str
    port: int = Field(default=587, ge=1, le=65535)
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username: str | None = None
    password: SecretStr | None = None
    from_: str = Field(alias="from")
    to: tuple[str, ...] = Field(min_length=1)
    timeout: Duration = timedelta(seconds=10)

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        if not _HOST.match(v.strip()):
            raise ValueError(f"{shorten(v)} is not a host name or address")
        return v.strip()

    @field_validator("from_")
    @classmethod
    def _from(cls, v: str) -> str:
        if not _ADDRESS.match(v.strip()):
            raise ValueError(f"{shorten(v)} is not an e-mail address")
        return v.strip()

    @field_validator("to")
    @classmethod
    def _to(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for address in v:
            if not _ADDRESS.match(address.strip()):
                raise ValueError(f"{shorten(address)} is not an e-mail address")
        return tuple(a.strip() for a in v)

    @model_validator(mode="after")
    def _login(self) -> EmailChannel:
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password: give both to log in, or neither")
        if self.username is not None and self.security == "none":
            raise ValueError(
                "security: logging in over an unencrypted connection would send the password "
                "in clear; use starttls or ssl"
            )
        return self


# ---------------------------------------------------------------------------- alerts


class Alerts(ConfigModel):
    """Which conditions alert (None: not set here) and the channels to tell."""

    failed: FailedRule | None = None
    retrying: RetryingRule | None = None
    lag: LagRule | None = None
    dlq_growth: DlqGrowthRule | None = None
    webhooks: tuple[WebhookChannel, ...] = ()
    slack: tuple[SlackChannel, ...] = ()
    email: tuple[EmailChannel, ...] = ()

    @field_validator("failed", "retrying", "lag", "dlq_growth", mode="before")
    @classmethod
    def _switch(cls, v: Any) -> Any:
        return _on_off(v)

    def rule(self, condition: str) -> Any:
        """The rule for `condition` (one of CONDITIONS), or None when it is not on."""
        value = getattr(self, condition)
        return value if value is not None and value.enabled else None

    @property
    def rules_on(self) -> tuple[str, ...]:
        return tuple(c for c in CONDITIONS if self.rule(c) is not None)

    @property
    def channels(self) -> tuple[WebhookChannel | SlackChannel | EmailChannel, ...]:
        return (*self.webhooks, *self.slack, *self.email)


def merged(server: Alerts | None, pipeline: Alerts | None) -> Alerts:
    """The rules one pipeline is watched by: each condition as the pipeline sets it (False
    turns the server's off), else as the server's file does; the channels of both."""
    if server is None:
        return pipeline or Alerts()
    if pipeline is None:
        return server
    rules = {
        c: getattr(pipeline, c) if getattr(pipeline, c) is not None else getattr(server, c)
        for c in CONDITIONS
    }
    return Alerts.model_construct(
        **rules,
        webhooks=(*server.webhooks, *pipeline.webhooks),
        slack=(*server.slack, *pipeline.slack),
        email=(*server.email, *pipeline.email),
    )


def parse_alerts(doc: Any, source: str | None = None) -> Alerts:
    """Validate a mapping as alert rules (the server's `--alerts` file): ConfigError names
    each field. The file may hold the rules at its top level or under `alerts:`."""
    if isinstance(doc, dict) and set(doc) == {"alerts"}:
        doc = doc["alerts"]
    if not isinstance(doc, dict):
        raise ConfigError("alert rules must be a mapping (key: value pairs)", source)
    from pydantic import ValidationError

    try:
        return Alerts.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc), source) from None
