"""``bulk_create`` by ``COPY`` for the history generator: on PostgreSQL the rows of a
model stream into its table as ``COPY ... FROM STDIN``, which skips building, sending
and parsing one multi-row ``INSERT`` of hundreds of thousands of parameters (most of
the generator's time before: Django compiling the statement, psycopg splitting it, the
server parsing it). Elsewhere it is ``bulk_create`` (in the batches the backend allows).

Each row takes what ``bulk_create`` would insert: every concrete field's ``pre_save``
value (defaults and ``auto_now_add`` applied as an insert applies them; a constant
``db_default`` for a value left unset) prepared for the database by the field. Models
whose primary key the database assigns are not taken: every model the generator writes
makes its own (UUIDs, or one-to-one keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import AutoField, BigAutoField, Model, SmallAutoField, Value
from django.db.models.expressions import DatabaseDefault


def copy_rows(model: type[Model], objs: Sequence[Model]) -> None:
    """Insert ``objs`` (new instances of ``model``) in the caller's transaction."""
    if not objs:
        return
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(objs)
        return
    meta = model._meta
    if isinstance(meta.pk, AutoField | BigAutoField | SmallAutoField):
        raise TypeError(f"{model.__name__}: the database assigns its keys; use bulk_create")
    fields = list(meta.concrete_fields)
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    sql = f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, connection.wrap_database_errors:
        copying = cursor.cursor.copy(sql)
        with copying as copy:
            for obj in objs:
                copy.write_row([_value(f, obj) for f in fields])


def _value(field: Any, obj: Model) -> Any:
    value = field.pre_save(obj, True)
    if isinstance(value, DatabaseDefault):  # unset, with a constant default in the table
        default = field._db_default_expression  # db_default, as an expression
        if not isinstance(default, Value):
            raise TypeError(f"{field}: a computed database default cannot go through COPY")
        value = default.value
    return field.get_db_prep_save(value, connection)
