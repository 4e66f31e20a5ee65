"""Sending one notice to one channel: a signed webhook, a Slack incoming webhook, an e-mail.

Each sender's `send` returns when the channel took the notice, or raises `AlertNotSent`
(worth another try: no answer, 5xx, 429) or `AlertRefused` (not: a 4xx, an address
refused). Messages name the channel by `label` (kind and host), never by its URL, secret
or password; redirects are not followed (a document's URL decides where the server posts).

The webhook signature: HMAC-SHA256 with the channel's secret over
`<X-Streamsift-Timestamp>.<raw body>`, sent as `X-Streamsift-Signature: sha256=<hex>`, so a
receiver that checks the signature and refuses old timestamps cannot be fed a replay.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import smtplib
import ssl
import time
from email.message import EmailMessage
from typing import Protocol
from urllib.parse import urlsplit

from streamsift.config.alerts import EmailChannel, SlackChannel, WebhookChannel
from streamsift.service.alerts.notices import Notice
from streamsift.service.errors import AlertNotSent, AlertRefused

SIGNATURE_HEADER = "X-Streamsift-Signature"
TIMESTAMP_HEADER = "X-Streamsift-Timestamp"
DELIVERY_HEADER = "X-Streamsift-Delivery"
EVENT_HEADER = "X-Streamsift-Event"
RETRY_STATUSES = frozenset({408, 425, 429})


class Sender(Protocol):
    label: str

    def send(self, notice: Notice) -> None: ...


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=<hex>` of HMAC-SHA256(secret, "<timestamp>." + body)."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signed: str, max_age_s: float = 300) -> bool:
    """What a receiver does: the signature matches and the timestamp is recent."""
    try:
        age = abs(time.time() - int(timestamp))
    except ValueError:
        return False
    return age <= max_age_s and hmac.compare_digest(signature(secret, timestamp, body), signed)


class WebhookSender:
    def __init__(self, channel: WebhookChannel) -> None:
        self._channel = channel
        self.label = f"webhook {_host(channel.url)}"

    def send(self, notice: Notice) -> None:
        body = notice.body()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "streamsift-alerts",
            TIMESTAMP_HEADER: stamp,
            SIGNATURE_HEADER: signature(self._channel.secret.get_secret_value(), stamp, body),
            DELIVERY_HEADER: notice.key,
            EVENT_HEADER: notice.event,
        }
        _post(self.label, self._channel.url, body, headers, self._channel.timeout.total_seconds())


class SlackSender:
    def __init__(self, channel: SlackChannel) -> None:
        self._channel = channel
        self.label = f"slack {_host(channel.webhook_url.get_secret_value())}"

    def send(self, notice: Notice) -> None:
        body = json.dumps({"text": notice.text()}).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "streamsift-alerts"}
        url = self._channel.webhook_url.get_secret_value()
        _post(self.label, url, body, headers, self._channel.timeout.total_seconds())


class EmailSender:
    def __init__(self, channel: EmailChannel) -> None:
        self._channel = channel
        self.label = f"email {channel.host}:{channel.port}"

    def send(self, notice: Notice) -> None:
        ch = self._channel
        message = EmailMessage()
        message["Subject"] = notice.line()
        message["From"] = ch.from_
        message["To"] = ", ".join(ch.to)
        message["X-Streamsift-Delivery"] = notice.key
        message.set_content(notice.text() + "\n")
        timeout = ch.timeout.total_seconds()
        try:
            if ch.security == "ssl":
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(
                    ch.host, ch.port, timeout=timeout, context=ssl.create_default_context()
                )
            else:
                smtp = smtplib.SMTP(ch.host, ch.port, timeout=timeout)
            with smtp:
                if ch.security == "starttls":
                    smtp.starttls(context=ssl.create_default_context())
                if ch.username is not None and ch.password is not None:
                    smtp.login(ch.username, ch.password.get_secret_value())
                smtp.send_message(message)
        except (smtplib.SMTPAuthenticationError, smtplib.SMTPNotSupportedError) as exc:
            raise AlertRefused(f"{self.label}: {_smtp_words(exc)}") from None
        except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused) as exc:
            raise AlertRefused(
                f"{self.label}: an address was refused: {_smtp_words(exc)}"
            ) from None
        except smtplib.SMTPResponseException as exc:
            error = AlertRefused if 500 <= exc.smtp_code < 600 else AlertNotSent
            raise error(f"{self.label}: {_smtp_words(exc)}") from None
        except (smtplib.SMTPException, OSError) as exc:
            raise AlertNotSent(f"{self.label}: {_smtp_words(exc)}") from None


def sender_for(channel: WebhookChannel | SlackChannel | EmailChannel) -> Sender:
    if isinstance(channel, WebhookChannel):
        return WebhookSender(channel)
    if isinstance(channel, SlackChannel):
        return SlackSender(channel)
    return EmailSender(channel)


def _post(label: str, url: str, body: bytes, headers: dict[str, str], timeout: float) -> None:
    """POST `body` to `url` with http.client: no library logs the URL (a Slack URL is a
    secret), no redirect is followed."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection: http.client.HTTPConnection
    if parts.scheme.lower() == "https":
        connection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.request("POST", target, body=body, headers=headers)
        code = connection.getresponse().status
    except (OSError, http.client.HTTPException) as exc:  # its text may hold the host only
        raise AlertNotSent(f"{label}: no answer ({type(exc).__name__})") from None
    finally:
        connection.close()
    if 200 <= code < 300:
        return
    if code >= 500 or code in RETRY_STATUSES:
        raise AlertNotSent(f"{label}: HTTP {code}")
    raise AlertRefused(f"{label}: HTTP {code} (not retried)")


def _host(url: str) -> str:
    """`host[:port]` of a URL: how a channel is named in logs (its path may be a secret)."""
    try:
        parts = urlsplit(url)
        return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else "?"
    except ValueError:
        return "?"


def _smtp_words(exc: BaseException) -> str:
    """What the SMTP exchange said, on one line (the server's words, no credentials: the
    login's password is never part of an SMTP answer)."""
    if isinstance(exc, smtplib.SMTPResponseException):
        text = (
            exc.smtp_error.decode("utf-8", "replace")
            if isinstance(exc.smtp_error, bytes)
            else str(exc.smtp_error)
        )
        return f"{exc.smtp_code} {' '.join(text.split())}"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return ", ".join(f"{rcpt} ({code})" for rcpt, (code, _) in exc.recipients.items())
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
