"""The `--allow-connect` matching (service/destinations.py): addresses, blocks, names, suffixes,
resolution (a resolver stands in for DNS: a table, no lookup leaves the test)."""

from __future__ import annotations

import pytest

from streamsift.service.destinations import allow_list, kafka_hosts, refused, url_host

DNS = {
    "localhost": ["127.0.0.1", "::1"],
    "kafka.internal": ["10.1.2.7"],
    "mixed.example": ["10.1.2.8", "192.0.2.1"],
    "v6.example": ["2001:db8::5"],
}


def fake_dns(name: str) -> list[str]:
    return DNS.get(name, [])


@pytest.mark.parametrize(
    ("entries", "host", "allowed"),
    [
        ((), "anything.example", True),  # no list: everything
        (("10.1.2.0/24",), "10.1.2.9", True),
        (("10.1.2.0/24",), "10.1.3.9", False),
        (("10.1.2.0/24",), "127.0.0.1", False),
        (("10.1.2.0/24",), "kafka.internal", True),  # resolves inside the block
        (("10.1.2.0/24",), "mixed.example", False),  # one address outside: refused
        (("10.1.2.0/24",), "unknown.example", False),  # does not resolve
        (("127.0.0.1",), "localhost", False),  # ::1 is not listed
        (("127.0.0.1", "::1"), "localhost", True),
        (("127.0.0.1",), "127.0.0.1", True),
        (("127.0.0.1",), "[::ffff:127.0.0.1]", True),  # IPv4-mapped
        (("2001:db8::/32",), "[2001:db8::1]", True),
        (("2001:db8::/32",), "v6.example", True),
        (("kafka.internal",), "KAFKA.internal.", True),  # by name, no resolution needed
        (("kafka.internal",), "other.internal", False),
        ((".internal",), "a.b.internal", True),
        (("*.internal",), "x.internal", True),
        (("*.internal",), "internal", False),
        (("10.1.2.0/33",), "10.1.2.1", False),  # a typo matches nothing
        (("10.1.2.0/24",), "", False),
        (("10.1.2.0/24",), "10.1.2.1\n", False),  # a newline is no host
        (("kafka.internal",), "kafka.internal\n", False),
    ],
)
def test_allow_list_matching(entries: tuple[str, ...], host: str, allowed: bool) -> None:
    assert allow_list(entries).allows(host, fake_dns) is allowed


def test_refused_names_the_first_host_outside() -> None:
    hosts = kafka_hosts("10.1.2.3:9092, PLAINTEXT://127.0.0.1:9093,[::1]:9094")
    assert hosts == ["10.1.2.3", "127.0.0.1", "::1"]
    assert refused(["10.1.2.0/24"], hosts, fake_dns) == "127.0.0.1"
    assert refused(["10.1.2.0/24", "127.0.0.0/8", "::1"], hosts, fake_dns) is None
    assert refused([], ["anything"], fake_dns) is None


def test_url_host() -> None:
    assert url_host("https://idp.example:8443/token") == "idp.example"
    assert url_host("http://[::1]:80/x") == "::1"
    assert url_host("not a url") == ""
