"""Whether the PostgreSQL (``DATABASE_URL``) and Redis (``REDIS_URL``) the scale tests use
answer. ``python -m tests.scale.reachable`` exits 1, saying which, when one does not."""

from __future__ import annotations

import os
import sys

import psycopg
import redis


def unreachable() -> str | None:
    """Why the servers cannot be used, or ``None`` when both answer."""
    try:
        psycopg.connect(os.environ.get("DATABASE_URL", ""), connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"PostgreSQL at DATABASE_URL is unreachable: {exc}"
    try:
        redis.Redis.from_url(os.environ.get("REDIS_URL", ""), socket_timeout=3).ping()
    except (redis.RedisError, ValueError) as exc:
        return f"Redis at REDIS_URL is unreachable: {exc}"
    return None


if __name__ == "__main__":
    why = unreachable()
    if why:
        print(why, file=sys.stderr)
    sys.exit(1 if why else 0)
