"""Where the service's connection helpers may connect: the operator's `--allow-connect` list.

The helper routes (Kafka and ClickHouse probes, topic sampling, schema inference, column
listing) connect wherever a request says. A server that can reach networks its clients cannot
would let them scan or read from those networks (SSRF). When the operator lists destinations,
a request naming any other host is refused before a connection is made.

An entry is an address (`127.0.0.1`, `::1`), a CIDR block (`10.1.2.0/24`), a host name
(`kafka.internal`, matched by name, case-insensitively) or a domain suffix (`.internal` or
`*.internal`: any name under it). A host name that no entry names is resolved, and allowed only
when every address it resolves to lies in a listed address or block; a name that does not
resolve is refused. An entry that is neither an address, a block nor a valid name matches
nothing (a typo fails closed). An empty list allows everything (the default).

Limits (docs/security.md): the name is resolved here and again by the client that connects, so
a DNS answer that changes in between is not caught; a Kafka broker that is allowed may point
clients at other brokers (its advertised listeners), which librdkafka then reaches.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str], list[str]]

_NAME = re.compile(
    r"[A-Za-z0-9_](?:[A-Za-z0-9_\-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_\-]{0,62}))*"
)


def resolve(host: str) -> list[str]:
    """The addresses `host` resolves to (empty when it does not)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, OSError):
        return []
    return sorted({str(info[4][0]).split("%", 1)[0] for info in infos})


@dataclass(frozen=True)
class AllowList:
    """The parsed `--allow-connect` entries."""

    networks: tuple[Network, ...] = ()
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # ".internal": names ending so
    entries: tuple[str, ...] = ()

    @property
    def open(self) -> bool:
        """True when nothing was listed: every destination is allowed."""
        return not self.entries

    def allows(self, host: str, resolver: Resolver = resolve) -> bool:
        """Whether a connection to `host` (a name or an address literal) is allowed."""
        if self.open:
            return True
        host = _bare(host)
        if not host:
            return False
        address = _address(host)
        if address is not None:
            return self._covers(address)
        name = host.lower().rstrip(".")
        if name in self.names or any(name.endswith(s) for s in self.suffixes):
            return True
        if not _NAME.fullmatch(name):
            return False
        found = [a for a in (_address(x) for x in resolver(name)) if a is not None]
        return bool(found) and all(self._covers(a) for a in found)

    def _covers(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        mapped = getattr(address, "ipv4_mapped", None)
        candidates = [address] if mapped is None else [address, mapped]
        return any(a in n for a in candidates for n in self.networks if a.version == n.version)


@lru_cache(maxsize=32)
def allow_list(entries: tuple[str, ...]) -> AllowList:
    """Parse `--allow-connect` entries (cached: the server's list is fixed at start)."""
    networks: list[Network] = []
    names: set[str] = set()
    suffixes: list[str] = []
    for raw in entries:
        entry = raw.strip()
        try:
            networks.append(ipaddress.ip_network(_bare(entry), strict=False))
            continue
        except ValueError:
            pass
        name = entry.lower().rstrip(".")
        if name.startswith("*."):
            name = name[1:]
        if name.startswith(".") and _NAME.fullmatch(name[1:]):
            suffixes.append(name)
        elif _NAME.fullmatch(name):
            names.add(name)
    return AllowList(tuple(networks), frozenset(names), tuple(suffixes), tuple(entries))


def kafka_hosts(bootstrap_servers: str) -> list[str]:
    """The hosts of `host:port[,host:port...]` (a `PROTOCOL://` prefix and IPv6 brackets off)."""
    hosts = []
    for server in bootstrap_servers.split(","):
        server = server.strip()
        if not server:
            continue
        server = server.split("://", 1)[-1]
        host, sep, port = server.rpartition(":")
        hosts.append(_bare(host if sep and port.isdigit() else server))
    return hosts


def url_host(url: str) -> str:
    """The host of a URL (`""` when it has none, which no list allows)."""
    try:
        return urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""


def refused(
    entries: Iterable[str], hosts: Iterable[str], resolver: Resolver = resolve
) -> str | None:
    """The first of `hosts` the list does not allow (None: all are allowed)."""
    allowed = allow_list(tuple(entries))
    if allowed.open:
        return None
    return next((h for h in hosts if not allowed.allows(h, resolver)), None)


def _bare(host: str) -> str:
    """`host` without IPv6 brackets (not stripped: a host with spaces is no host)."""
    if host.startswith("[") and "]" in host:
        host = host[1 : host.index("]")]
    return host


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
