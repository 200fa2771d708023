"""What Studio accepts of an MCP server, checked when it is saved (the API's serializer
and the admin's form share these checks, and the API schema's patterns are these): who
may register which transport, URLs, header and environment names and values, stdio
commands and arguments."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from studio import security
from studio.models import McpServer

MAX_HEADERS = 32
MAX_ENV = 32
MAX_ARGS = 64
MAX_VALUE_CHARS = 4_000
MAX_COMMAND_CHARS = 1_000
MAX_URL_CHARS = 2_000
# Set by the MCP client or by HTTP itself: a stored value would break the protocol or
# smuggle a second request.
RESERVED_HEADERS = frozenset(
    {
        "accept",
        "connection",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)

# The patterns below are both the checks and the API schema's, so a value the schema
# admits is one Studio accepts. Character classes are spelled out (no \s), so Python
# and ECMAScript read them alike.
_CONTROL = r"\x00-\x1f\x7f-\x9f"


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


HEADER_NAME_PATTERN = (
    rf"^(?!(?:{'|'.join(_any_case(name) for name in sorted(RESERVED_HEADERS))})$)"
    r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$"
)
"""An HTTP field name (RFC 9110 token) the MCP client does not set itself."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
VALUE_PATTERN = rf"^[^{_CONTROL}]*$"
"""A header or environment value: no control characters (no header injection)."""
COMMAND_PATTERN = rf"^[^ ={_CONTROL}](?:[^={_CONTROL}]*[^ ={_CONTROL}])?$"
"""One program name or path: no control characters, no '=' (env(1) would read it as a
variable), no spaces at either end."""
ARG_PATTERN = r"^[^\x00]*$"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
_H16 = "[0-9A-Fa-f]{1,4}"
_IPV6 = "|".join(
    [
        rf"(?:{_H16}:){{7}}{_H16}",
        rf"(?:{_H16}:){{1,7}}:",
        rf"(?:{_H16}:){{1,6}}:{_H16}",
        rf"(?:{_H16}:){{1,5}}(?::{_H16}){{1,2}}",
        rf"(?:{_H16}:){{1,4}}(?::{_H16}){{1,3}}",
        rf"(?:{_H16}:){{1,3}}(?::{_H16}){{1,4}}",
        rf"(?:{_H16}:){{1,2}}(?::{_H16}){{1,5}}",
        rf"{_H16}:(?::{_H16}){{1,6}}",
        rf":(?:(?::{_H16}){{1,7}}|:)",
        rf"::(?:[Ff]{{4}}(?::0{{1,4}})?:)?{_IPV4}",
        rf"(?:{_H16}:){{1,4}}:{_IPV4}",
    ]
)
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
URL_PATTERN = (
    rf"^https?://(?:[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*\.?|\[(?:{_IPV6})\])(?::{_PORT})?"
    rf"(?:[/?#][^ {_CONTROL}]*)?$"
)
"""The shape of an MCP endpoint URL; where it points is ``check_url``'s business."""
STDIO_STAFF_ONLY = "only staff can register or change stdio MCP servers"


# Who may do what


def may_manage(user: AbstractBaseUser | AnonymousUser, transport: str) -> bool:
    """Whether ``user`` may create or change a server of ``transport``: anyone signed in
    for ``http``; staff only for ``stdio``, which runs a program on Studio's host."""
    if not user.is_authenticated or not user.is_active:
        return False
    return transport != McpServer.Transport.STDIO or bool(getattr(user, "is_staff", False))


def env_allowlist() -> frozenset[str]:
    return frozenset(settings.STUDIO_MCP_ENV_ALLOWLIST)


# Checking values (the API's serializer and the admin's form share these)


class InvalidValue(Exception):
    """One value that cannot be stored; ``code`` is stable, the message readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_url(url: str) -> None:
    """Raise ``InvalidValue`` unless Studio may send requests to ``url`` now; the code is
    ``studio.security``'s (``address_not_allowed``, ``unresolvable``...)."""
    if not re.fullmatch(URL_PATTERN, url):
        raise InvalidValue("invalid", "an http(s) URL with a host name or address")
    try:
        security.check_outbound_url(url)
    except security.OutboundURLError as exc:
        raise InvalidValue(exc.code, exc.detail) from None


def check_headers(headers: Mapping[str, str]) -> None:
    if len(headers) > MAX_HEADERS:
        raise InvalidValue("too_many", f"at most {MAX_HEADERS} headers")
    for name, value in headers.items():
        if name.lower() in RESERVED_HEADERS:
            raise InvalidValue("reserved", f"the MCP client sets {name!r} itself")
        if not re.fullmatch(HEADER_NAME_PATTERN, name):
            raise InvalidValue("invalid_name", f"{name!r} is not a valid header name")
        _check_value(f"header {name!r}", value)


def check_env(env: Mapping[str, str]) -> None:
    allowed = env_allowlist()
    if len(env) > MAX_ENV:
        raise InvalidValue("too_many", f"at most {MAX_ENV} variables")
    for name, value in env.items():
        if not re.fullmatch(ENV_NAME_PATTERN, name):
            raise InvalidValue("invalid_name", f"{name!r} is not a valid variable name")
        if name not in allowed:
            raise InvalidValue(
                "not_allowed",
                f"{name!r} is not in STUDIO_MCP_ENV_ALLOWLIST "
                f"(allowed: {', '.join(sorted(allowed)) or 'none'})",
            )
        _check_value(f"variable {name!r}", value)


def check_command(command: str) -> None:
    if len(command) > MAX_COMMAND_CHARS or not re.fullmatch(COMMAND_PATTERN, command):
        raise InvalidValue(
            "invalid",
            "one program name or path: no control characters or '=', no spaces at either end",
        )


def check_args(args: Sequence[str]) -> None:
    if len(args) > MAX_ARGS:
        raise InvalidValue("too_many", f"at most {MAX_ARGS} arguments")
    if not all(isinstance(arg, str) and re.fullmatch(ARG_PATTERN, arg) for arg in args):
        raise InvalidValue("invalid", "each argument is a string without NUL")


def _check_value(what: str, value: str) -> None:
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidValue("too_long", f"{what}: at most {MAX_VALUE_CHARS} characters")
    if not re.fullmatch(VALUE_PATTERN, value):
        raise InvalidValue("invalid", f"{what}: control characters are not allowed")
