"""Outbound requests: which URLs Studio may send a request (and a provider key) to.

A model base URL or an MCP server URL comes from a user, and the server sends requests
to it from inside the deployment's network. Without a check, a user could aim Studio at
the cloud metadata service, at an admin port on loopback, or at anything on the private
network (server-side request forgery). ``check_outbound_url`` refuses every address that
is not globally routable, in every spelling a resolver accepts (decimal, octal, hex and
short IPv4; IPv4-mapped, -compatible, 6to4 and NAT64 IPv6), and every host name that
resolves to one, unless ``settings.STUDIO_OUTBOUND_ALLOWLIST`` admits it.

The allowlist is set by whoever deploys Studio (staff), never by users: a comma-separated
list of host names (exact, case-insensitive) and addresses or CIDR networks, e.g.
``STUDIO_OUTBOUND_ALLOWLIST=ollama.internal,10.0.5.0/24,127.0.0.1``. Unset, it is empty,
except on the embedded default (``make run``, one user on loopback), where it admits
loopback only (``studio.settings``); start-up says so (``log_policy``).

The check runs when a URL is saved, and again before each use (a name may resolve
differently later); the model client does not follow redirects, so a public endpoint
cannot bounce a request to a refused address.
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from django.conf import settings

logger = logging.getLogger(__name__)
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Iterable[str]]

_SCHEMES = {"http": 80, "https": 443}
# Networks that carry an IPv4 address inside an IPv6 one: the embedded address is
# what the request reaches, so it is checked too.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class OutboundURLError(Exception):
    """A URL Studio must not send requests to. ``code`` is stable, ``detail`` readable."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Allowlist:
    hosts: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowlist:
        hosts: set[str] = set()
        networks = []
        for entry in entries:
            value = entry.strip().lower().rstrip(".")
            if not value:
                continue
            try:
                networks.append(ipaddress.ip_network(value.strip("[]"), strict=False))
            except ValueError:
                hosts.add(value)
        return cls(frozenset(hosts), tuple(networks))

    def admits_host(self, host: str) -> bool:
        return host in self.hosts

    def admits_address(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)


def configured_allowlist() -> Allowlist:
    return Allowlist.parse(getattr(settings, "STUDIO_OUTBOUND_ALLOWLIST", []))


def policy_line() -> str | None:
    """The start-up line saying which non-public addresses outbound requests may reach;
    ``None`` when they reach public addresses only."""
    entries = ", ".join(settings.STUDIO_OUTBOUND_ALLOWLIST)
    if not entries:
        return None
    if settings.STUDIO_OUTBOUND_LOOPBACK_BY_DEFAULT:
        return (
            f"Outbound model/MCP requests may reach loopback ({entries}): embedded default; "
            "set STUDIO_OUTBOUND_ALLOWLIST= to refuse"
        )
    return (
        f"Outbound model/MCP requests may reach {entries} besides public addresses "
        "(STUDIO_OUTBOUND_ALLOWLIST)"
    )


def log_policy() -> None:
    """Say at start-up what ``policy_line`` says, if anything."""
    if (line := policy_line()) is not None:
        logger.info("%s", line)


def policy_for_users() -> str:
    """What a user entering a URL is told about addresses, without listing the
    operator's entries (which may name internal hosts)."""
    if settings.STUDIO_OUTBOUND_LOOPBACK_BY_DEFAULT:
        return (
            "Addresses on this machine (loopback, such as Ollama's 127.0.0.1:11434) are "
            "allowed: Studio runs on its embedded default. Private-network and other "
            "non-public addresses are refused unless the operator who runs Studio lists "
            "them in the STUDIO_OUTBOUND_ALLOWLIST setting."
        )
    return (
        "Loopback, private-network and other non-public addresses are refused unless "
        "the operator who runs Studio lists them in the STUDIO_OUTBOUND_ALLOWLIST setting."
    )


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (what the HTTP client will connect to)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def check_outbound_url(
    url: str, *, allowlist: Allowlist | None = None, resolver: Resolver | None = None
) -> None:
    """Raise ``OutboundURLError`` unless ``url`` is an http(s) URL whose host is
    allowlisted or resolves only to globally routable unicast addresses."""
    allowlist = configured_allowlist() if allowlist is None else allowlist
    host, port = _host_and_port(url)
    if allowlist.admits_host(host):
        return
    literal = parse_ip_literal(host)
    if literal is not None:
        _check_address(literal, allowlist, host=host, shown=host)
        return
    for address in _resolve(host, port, resolver or system_resolver):
        _check_address(address, allowlist, host=host, shown=f"{host} ({address})")


def _host_and_port(url: str) -> tuple[str, int]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise OutboundURLError("invalid_url", f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise OutboundURLError("scheme_not_allowed", "only http and https URLs are allowed")
    if parts.username is not None or parts.password is not None:
        # Credentials belong in the API key field (encrypted), and "user@host" is a
        # classic way to make a URL look like it goes somewhere else.
        raise OutboundURLError("credentials_in_url", "a URL must not contain credentials")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise OutboundURLError("invalid_url", "the URL has no host")
    return host, port or _SCHEMES[scheme]


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` denotes if it is an IP literal in any form a resolver
    accepts (``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``, ``[::1]``)."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not host or not all(part for part in host.split(".")):
        return None
    try:
        # inet_aton takes exactly the legacy IPv4 spellings getaddrinfo honours.
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _resolve(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    try:
        raw = list(resolver(host, port))
    except (OSError, UnicodeError):
        raise OutboundURLError("unresolvable", f"cannot resolve host {host!r}") from None
    if not raw:
        raise OutboundURLError("unresolvable", f"cannot resolve host {host!r}")
    return [ipaddress.ip_address(address.split("%", 1)[0]) for address in raw]


def _check_address(address: IPAddress, allowlist: Allowlist, *, host: str, shown: str) -> None:
    for candidate in _meanings(address):
        if allowlist.admits_address(candidate):
            return
    # The kind named is the innermost address's: what ::ffff:127.0.0.1 reaches is loopback.
    if refused := [c for c in _meanings(address) if not is_public_address(c)]:
        raise OutboundURLError(
            "address_not_allowed",
            f"{shown} is {_kind(refused[-1])}, which Studio sends no requests to unless "
            "the operator who runs Studio allows it with the STUDIO_OUTBOUND_ALLOWLIST "
            f"setting (e.g. STUDIO_OUTBOUND_ALLOWLIST={host.strip('[]')})",
        )


_SHARED = ipaddress.ip_network("100.64.0.0/10")


def _kind(address: IPAddress) -> str:
    """What a non-public address is, in words."""
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address (this machine)"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private-network address"
    if address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    return "a reserved, non-public address"


def _meanings(address: IPAddress) -> list[IPAddress]:
    """The address itself and any IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv4Address):
        return [address]
    found: list[IPAddress] = [address]
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in _NAT64 or address in _NAT64_LOCAL or address in _IPV4_COMPATIBLE:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def is_public_address(address: IPAddress) -> bool:
    """Globally routable unicast: not loopback, private, link-local (metadata), CGNAT,
    unspecified, reserved, documentation or multicast."""
    return address.is_global and not address.is_multicast


# Secrets in text that came from elsewhere (a provider's error body may quote the key)

REDACTED = "[redacted]"
_MIN_SECRET_CHARS = 8


def secret_forms(secret: str) -> list[str]:
    """The ways a secret can appear in text: raw, URL-encoded, and base64 (standard and
    url-safe, of the secret alone or of an ``Authorization`` header value)."""
    raw = secret.encode()
    forms = {secret, quote(secret, safe=""), quote_plus(secret)}
    for blob in (raw, b"Bearer " + raw, b":" + raw):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.add(encode(blob).decode().rstrip("="))
    # Longest first, so a form that contains another is replaced whole.
    return sorted(forms, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every secret (of at least 8 characters) replaced."""
    for secret in secrets:
        if len(secret) < _MIN_SECRET_CHARS:
            continue
        for form in secret_forms(secret):
            text = text.replace(form, REDACTED)
    return text


def redact_json(value: Any, secrets: Sequence[str]) -> Any:
    """Parsed JSON ``value`` (a tool's input schema, say) with ``redact`` applied to every
    string in it, object keys included; other values are kept as they are."""
    match value:
        case str():
            return redact(value, secrets)
        case dict():
            return {redact(key, secrets): redact_json(item, secrets) for key, item in value.items()}
        case list():
            return [redact_json(item, secrets) for item in value]
        case _:
            return value
