"""Typed helpers that read settings from the environment and fail loudly on bad values."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


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
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(50)
    path.write_text(secret)
    path.chmod(0o600)
    return secret


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
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key().decode()
    path.write_text(key)
    path.chmod(0o600)
    return key


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
    return config


def env_redis_url(name: str) -> str | None:
    """A ``redis://`` or ``rediss://`` URL, or ``None`` when unset."""
    raw = os.environ.get(name)
    if not raw:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"{name} must be a redis:// or rediss:// URL, got {raw!r}")
    return raw
