"""Columns of the models as hand-written SQL names and fills them: quoted table and
column names, a value as a field hands it to the driver, and the driver's own forms of
a UUID, a JSON text and a datetime (``studio.event_rows`` stores events with these)."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model


@dataclass(frozen=True, slots=True)
class Adapt:
    """How one connection's driver takes a UUID, a JSON text and an aware datetime:
    what the backend's ``ops`` (``adapt_json_value``, ``adapt_datetimefield_value``)
    make of them, without their per-value lookups of settings and connection."""

    uuid: Callable[[uuid.UUID], Any]
    json: Callable[[str], Any]
    datetime: Callable[[datetime], Any]

    @classmethod
    def of(cls, conn: BaseDatabaseWrapper) -> Adapt:
        native_uuid = conn.features.has_native_uuid_field
        as_uuid: Callable[[uuid.UUID], Any] = _same if native_uuid else _uuid_hex
        if conn.vendor == "postgresql":
            from psycopg.types.json import Jsonb

            return cls(as_uuid, lambda text: Jsonb(text, dumps=_same), _same)
        if conn.vendor == "sqlite" and settings.USE_TZ:
            zone = conn.timezone  # naive in the connection's zone, as make_naive does
            return cls(as_uuid, _same, lambda when: str(when.astimezone(zone).replace(tzinfo=None)))
        ops = conn.ops
        return cls(
            as_uuid,
            lambda text: ops.adapt_json_value(json.loads(text), None),
            ops.adapt_datetimefield_value,
        )


def _same(value: Any) -> Any:
    return value


def _uuid_hex(value: uuid.UUID) -> str:
    return value.hex


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def names(model: type[Model], *fields: str) -> list[str]:
    """The quoted column names of ``fields`` (the SQL written by hand names no other)."""
    return [connection.ops.quote_name(_column(model, name)) for name in fields]


def db(model: type[Model], field: str, value: Any) -> Any:
    """``value`` as ``field`` hands it to the database driver."""
    return _field(model, field).get_db_prep_save(value, connection)


@functools.cache
def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return field


def _column(model: type[Model], name: str) -> str:
    column = _field(model, name).column
    if column is None:
        raise TypeError(f"{model.__name__}.{name} has no column")
    return column
