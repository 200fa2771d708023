"""Typed helpers that read settings from the environment and fail loudly on bad values."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def runserver_apps() -> list[str]:
    """``["daphne"]`` for ``manage.py runserver``, else none. Daphne's app gives
    runserver its ASGI server (websockets too); loading it imports Twisted and the
    server (~0.4 s of CPU), which no other command uses, nor Daphne run as
    ``python -m daphne``, which needs no app."""
    return ["daphne"] if sys.argv[1:2] == ["runserver"] else []


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_is_set(name: str) -> bool:
    """Whether the variable is set at all (an empty value counts: it says "none")."""
    return name in os.environ


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def dev_secret(path: Path) -> str:
    """A random secret kept in a file under the data directory, for development only."""
    return _dev_file(path, secrets.token_urlsafe(50))


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_rate(name: str, default: str) -> tuple[int, int]:
    """A rate such as ``20/min`` (per s, min, hour or day) as ``(count, seconds)``."""
    raw = os.environ.get(name, default)
    count, _, period = raw.strip().partition("/")
    if not count.isdigit() or int(count) < 1 or period not in _PERIODS:
        raise ImproperlyConfigured(
            f"{name} must be a rate such as 20/min (at least 1, per s, min, hour or day),"
            f" got {raw!r}"
        )
    return int(count), _PERIODS[period]


def env_fernet_keys(name: str) -> list[str]:
    """Comma-separated Fernet keys: the first encrypts, all of them decrypt."""
    keys = env_list(name, [])
    for position, key in enumerate(keys):
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: key #{position + 1} is not a Fernet key (32 url-safe base64 bytes); "
                "make one with `python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'`"
            ) from None
    return keys


def dev_fernet_key(path: Path) -> str:
    """A Fernet key kept in a file under the data directory, for development only."""
    return _dev_file(path, Fernet.generate_key().decode())


def _dev_file(path: Path, fresh: str) -> str:
    """``path``'s value, or ``fresh`` written there if it has none yet. Processes that
    start together on a new data directory (two Daphnes, test workers) all get the value
    of the one that wrote first: the file appears whole (written aside, then linked
    into place, which fails if it exists) and is never overwritten."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        aside.write_text(fresh)
        aside.chmod(0o600)
        try:
            os.link(aside, path)
        except FileExistsError:
            pass
        finally:
            aside.unlink()
    return path.read_text().strip()


def env_database(name: str) -> dict[str, object] | None:
    """The database a ``DATABASE_URL``-style variable names (PostgreSQL or SQLite), or
    ``None`` when it is unset."""
    import dj_database_url

    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        config = dict(dj_database_url.parse(raw, conn_max_age=60, conn_health_checks=True))
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not a database URL: {exc}") from None
    engine = str(config.get("ENGINE", ""))
    if not engine.endswith(("postgresql", "sqlite3")):
        raise ImproperlyConfigured(f"{name} must name a PostgreSQL or SQLite database")
    if engine.endswith("postgresql"):
        _pool(config)
    return config


def _pool(config: dict[str, object]) -> None:
    """A bounded pool of PostgreSQL connections per process (psycopg_pool through
    Django's ``pool`` option) when ``STUDIO_DB_POOL_MAX`` is above 0.

    Django keeps a connection per thread that runs ORM work, and Daphne runs each
    request's sync code on a thread of its own: with persistent connections
    (``CONN_MAX_AGE``) a server under load held a connection per concurrent request
    and two servers and a worker exhausted PostgreSQL's ``max_connections`` (bench/README,
    "Many users"). Pooled, a thread takes a connection for a request (or an ORM call
    from async code) and gives it back at its end; at most ``STUDIO_DB_POOL_MAX`` are
    open per process, and a thread waits up to ``STUDIO_DB_POOL_TIMEOUT_S`` for one
    before the request fails. Django requires ``CONN_MAX_AGE=0`` with a pool.
    """
    size = env_int("STUDIO_DB_POOL_MAX", 0, minimum=0)
    if size == 0:
        return
    from psycopg_pool import ConnectionPool

    timeout = env_float("STUDIO_DB_POOL_TIMEOUT_S", 10.0, minimum=0.1)
    pool = {
        "min_size": min(2, size),
        "max_size": size,
        "timeout": timeout,
        # A connection the server ended while it sat in the pool (a restart, an admin's
        # pg_terminate_backend) is replaced when taken, not handed out to fail.
        "check": ConnectionPool.check_connection,
    }
    options = config.get("OPTIONS")
    config["OPTIONS"] = {**(options if isinstance(options, dict) else {}), "pool": pool}
    config["CONN_MAX_AGE"] = 0
    config["CONN_HEALTH_CHECKS"] = False


def env_redis_url(name: str) -> str | None:
    """A ``redis://`` or ``rediss://`` URL, or ``None`` when unset."""
    raw = os.environ.get(name)
    if not raw:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"{name} must be a redis:// or rediss:// URL, got {raw!r}")
    return raw


OTLP_SIGNAL_PREFIXES = ("OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_")
"""The exporter's variables: for every signal, and for traces only (which wins)."""


def env_otel_traces_exporter() -> str:
    """``OTEL_TRACES_EXPORTER``: ``otlp`` (OTLP/HTTP), or ``none`` when unset, empty,
    ``none`` or ``OTEL_SDK_DISABLED=true``. With ``otlp`` the OpenTelemetry SDK reads the
    other ``OTEL_*`` variables itself; they are checked here, so that a bad value stops
    start-up rather than failing every export (the SDK would log and fall back)."""
    raw = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "none"
    if raw not in {"none", "otlp"}:
        raise ImproperlyConfigured(
            f"OTEL_TRACES_EXPORTER must be otlp (OTLP/HTTP) or none, got {raw!r}"
        )
    if raw == "none" or env_bool("OTEL_SDK_DISABLED", False):
        return "none"
    for prefix in OTLP_SIGNAL_PREFIXES:
        _check_otlp_endpoint(f"{prefix}ENDPOINT")
        _check_pairs(f"{prefix}HEADERS")
        _check_one_of(f"{prefix}PROTOCOL", {"http/protobuf"})
        _check_one_of(f"{prefix}COMPRESSION", {"none", "gzip", "deflate"})
        if _set(f"{prefix}TIMEOUT"):
            env_float(f"{prefix}TIMEOUT", 10.0, minimum=0.001)
    _check_pairs("OTEL_RESOURCE_ATTRIBUTES")
    _check_batching()
    return raw


def env_otel_queue_size() -> int:
    """``OTEL_BSP_MAX_QUEUE_SIZE``: how many spans may wait to be exported (2048)."""
    return _otel_int("OTEL_BSP_MAX_QUEUE_SIZE", 2048)


def _set(name: str) -> str | None:
    """The variable's value, ``None`` when unset or blank (the SDK reads blank as unset)."""
    value = os.environ.get(name, "").strip()
    return value or None


def _otel_int(name: str, default: int) -> int:
    return env_int(name, default, minimum=1) if _set(name) else default


def _check_otlp_endpoint(name: str) -> None:
    value = _set(name)
    if value is None:
        return
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ImproperlyConfigured(f"{name} must be an http:// or https:// URL")


def _check_pairs(name: str) -> None:
    """A comma-separated list of ``key=value`` (headers, resource attributes). Values
    are not quoted back: a header may carry the collector's token."""
    value = _set(name)
    if value is None:
        return
    for position, item in enumerate(value.split(","), start=1):
        key, equals, _ = item.partition("=")
        if item.strip() and (not equals or not key.strip()):
            raise ImproperlyConfigured(f"{name}: item #{position} is not key=value")


def _check_one_of(name: str, choices: set[str]) -> None:
    value = _set(name)
    if value is not None and value.lower() not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {sorted(choices)}, got {value!r}")


def _check_batching() -> None:
    queue = env_otel_queue_size()
    batch = _otel_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
    _otel_int("OTEL_BSP_SCHEDULE_DELAY", 5000)
    if batch > queue:
        raise ImproperlyConfigured(
            f"OTEL_BSP_MAX_EXPORT_BATCH_SIZE ({batch}) must not exceed OTEL_BSP_MAX_QUEUE_SIZE "
            f"({queue})"
        )
