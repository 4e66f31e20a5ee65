"""The service's errors: its secrets at rest, and the authoring helpers the API and UI use
(expression previews, connection probes). The API maps them to HTTP statuses by kind
(api/error_responses.py)."""

from __future__ import annotations

from streamsift.errors import ConfigurationError, PermanentError, TransientError

# ------------------------------------------------------------------ secrets at rest


class SecretKeyError(ConfigurationError):
    """The key for the secrets at rest is unusable (malformed, or not the one they were
    encrypted with)."""


# ------------------------------------------------------------------ expression previews


class ExpressionProblem(ConfigurationError):
    """The expression (or the sample event given with it) cannot be checked or evaluated."""


class ExpressionTooBig(ExpressionProblem):
    """The expression is past a bound on its size or nesting (the API answers 422)."""


# ------------------------------------------------------------------ connection probes


class KafkaUnreachable(TransientError):
    """The broker did not answer within the probe's wait."""

    default_hint = "is the broker up, and bootstrap_servers right?"


class ClickHouseUnreachable(TransientError):
    """ClickHouse did not answer within the probe's wait."""

    default_hint = "is ClickHouse up, and host/port right?"


class ClickHouseRefused(PermanentError):
    """ClickHouse answered with an error (credentials, database, a statement it refused)."""

    default_hint = "check the connection's username, password and database"


class NotClickHouse(PermanentError):
    """Something answered that is not a ClickHouse HTTP interface."""

    default_hint = "is host/port ClickHouse's HTTP port (8123, or 8443 with secure)?"


class KafkaClientRefused(ConfigurationError):
    """librdkafka refused the settings it was given (before any connection)."""

    default_hint = "check bootstrap_servers and security"


class TokenProviderFailed(ConfigurationError):
    """The OAUTHBEARER token provider raised instead of giving a token."""

    default_hint = (
        "check security.oauthbearer: the provider's name and args, and what it needs on this "
        "server (its package, credentials); the server's log has the details"
    )


# ------------------------------------------------------------------ alerts


class AlertNotSent(TransientError):
    """A channel did not take an alert (no answer, a 5xx, a 429, an SMTP server that was
    busy): tried again with back-off, a bounded number of times."""


class AlertRefused(PermanentError):
    """A channel refused an alert for good (a 4xx, an SMTP address refused): not retried."""


# ------------------------------------------------------------------ the pipeline host


class HostUnavailable(TransientError):
    """The pipeline host (service/pipeline_host.py) did not start, or did not answer."""

    default_hint = "the service starts a new host; its log is <data_dir>/host/host.log"
