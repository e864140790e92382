"""Where a webhook may send: one parser for every spelling of a host and one
table of the address ranges that are not public. Registration and delivery
both call `check_host` / `check_address`, so what the console and the REST
API accept is exactly what a delivery will connect to.

Why a parser of our own: the delivery connects through the C library
(`getaddrinfo`, i.e. `inet_aton`), which reads `2130706433`, `0x7f000001`,
`127.1` and `0177.0.0.1` as 127.0.0.1, while Python's `ipaddress` refuses
those spellings and would let them pass as "names". And an IPv6 address can
carry an IPv4 one (IPv4-mapped, NAT64, 6to4): `64:ff9b::7f00:1` reaches
127.0.0.1 through a NAT64 gateway although `ipaddress` calls it global.
So the embedded IPv4 address is taken out and checked against the same
table.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# (range, what it is). First match wins. From IANA's IPv4 and IPv6
# special-purpose address registries (RFC 6890 and its updates): every
# range whose "globally reachable" column is not "True", plus multicast.
_V4_RANGES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "this-network"),  # 0.0.0.0 reaches the local host on Linux
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)
_V6_RANGES: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible (deprecated)"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing (SRv6)"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
)
# IPv6 ranges that carry an IPv4 address: (range, name, where the 32 bits
# sit, counted in bits from the right end of the 128).
_EMBEDDING: tuple[tuple[str, str, int], ...] = (
    ("::ffff:0:0/96", "IPv4-mapped", 0),
    ("::ffff:0:0:0/96", "IPv4-translated", 0),
    ("64:ff9b::/96", "NAT64", 0),
    ("2002::/16", "6to4", 80),
)

RANGES: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(net), label) for net, label in _V4_RANGES + _V6_RANGES)
EMBEDDING: tuple[tuple[ipaddress.IPv6Network, str, int], ...] = tuple(
    (ipaddress.IPv6Network(net), label, shift) for net, label, shift in _EMBEDDING)

# Names that never leave the machine or the site (RFC 6761, RFC 8375, and
# the suffixes intranets and cloud providers use for internal names).
LOCAL_NAMES = ("localhost",)
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".home.arpa", ".intranet", ".lan")

_NUMBER = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class HostError(ValueError):
    """The host is not something an HTTP client could connect to."""


@dataclass(frozen=True)
class Refusal:
    """Why a destination is not public, in words and as data."""

    address: str  # the address the client would reach (the embedded IPv4 one, if any)
    network: str  # the range it falls in
    label: str  # what that range is
    via: str = ""  # the IPv6 form that carried it, when embedded

    def sentence(self, host: str) -> str:
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        tail = "webhooks go only to public addresses."
        if self.network == "name":
            return f"The host {shown} is a {self.label} name; {tail}"
        where = f"in the {self.label} range ({self.network})"
        if self.via:
            return f"The host {shown} carries the IPv4 address {self.address} ({self.via}), {where}; {tail}"
        if host.strip("[].").lower() != self.address:
            return f"The host {shown} is the address {self.address}, {where}; {tail}"
        return f"The host {shown} is {where}; {tail}"


def _ipv4_number(part: str) -> int:
    if part.startswith("0x"):
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        if not set(part) <= set("01234567"):
            raise HostError(f"{part!r} is not an octal number")
        return int(part, 8)
    return int(part)


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The host read as the C library's `inet_aton` (and the WHATWG URL
    standard) reads it: one to four parts, each decimal, octal (leading 0)
    or hexadecimal (0x), the last filling the remaining bytes. None when the
    host is not numeric at all (a name); HostError when it is numeric but no
    address."""
    parts = host.split(".")
    if not parts or not _NUMBER.match(parts[-1]):
        return None
    if len(parts) > 4 or not all(_NUMBER.match(p) for p in parts):
        raise HostError(f"{host!r} looks like an IPv4 address but is not one")
    numbers = [_ipv4_number(p) for p in parts]
    head, last = numbers[:-1], numbers[-1]
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise HostError(f"{host!r} is out of range for an IPv4 address")
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


@dataclass(frozen=True)
class Host:
    """A URL's host, parsed: either an address (any spelling) or a name."""

    text: str  # lowercased, without the brackets, zone or trailing dot
    address: Address | None


def parse_host(host: str) -> Host:
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return Host(text=text, address=ipaddress.IPv6Address(text.split("%", 1)[0]))
        except ValueError as exc:
            raise HostError(f"{host!r} is not a valid IPv6 address") from exc
    # One trailing dot is the DNS root: "localhost." and "127.0.0.1." are the
    # same host to a resolver and to most HTTP clients.
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    if not text:
        raise HostError("the host is empty")
    address = parse_ipv4(text)
    if address is not None:
        return Host(text=text, address=address)
    try:
        ascii_name = text.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise HostError(f"{host!r} is not a valid host name") from exc
    if len(ascii_name) > 253 or not all(_LABEL.match(label) for label in ascii_name.split(".")):
        raise HostError(f"{host!r} is not a valid host name")
    return Host(text=ascii_name, address=None)


def check_address(address: Address | str) -> Refusal | None:
    """None when the address is public; otherwise which range it is in."""
    ip = ipaddress.ip_address(address.split("%", 1)[0]) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        for carrier, label, shift in EMBEDDING:
            if ip in carrier:
                inner = ipaddress.IPv4Address((int(ip) >> shift) & 0xFFFFFFFF)
                found = check_address(inner)
                if found is not None:
                    return Refusal(address=found.address, network=found.network, label=found.label,
                                   via=f"{label}, {carrier}")
                return None
    for network, label in RANGES:
        if ip.version == network.version and ip in network:
            return Refusal(address=str(ip), network=str(network), label=label)
    return None


def check_name(name: str) -> Refusal | None:
    if name in LOCAL_NAMES or name.endswith(LOCAL_SUFFIXES):
        return Refusal(address=name, network="name", label="local")
    return None


def check_host(host: Host) -> Refusal | None:
    """The check before any DNS: an address in any spelling, or a name that
    is local by definition."""
    if host.address is not None:
        return check_address(host.address)
    return check_name(host.text)
