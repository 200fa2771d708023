import django.db.models.deletion
from django.conf import settings
import logging

from django.db import OperationalError, migrations, models, transaction

# SQLite: an FTS5 index over the memories' text, kept in step by triggers (an
# external-content table: it reads the text from studio_memory by rowid, the integer id).
SQLITE_FTS = [
    "CREATE VIRTUAL TABLE studio_memory_fts USING fts5("
    "text, content='studio_memory', content_rowid='id', tokenize='unicode61')",
    "CREATE TRIGGER studio_memory_fts_insert AFTER INSERT ON studio_memory BEGIN "
    "INSERT INTO studio_memory_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER studio_memory_fts_delete AFTER DELETE ON studio_memory BEGIN "
    "INSERT INTO studio_memory_fts(studio_memory_fts, rowid, text) "
    "VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER studio_memory_fts_update AFTER UPDATE OF text ON studio_memory BEGIN "
    "INSERT INTO studio_memory_fts(studio_memory_fts, rowid, text) "
    "VALUES ('delete', old.id, old.text); "
    "INSERT INTO studio_memory_fts(rowid, text) VALUES (new.id, new.text); END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS studio_memory_fts_insert",
    "DROP TRIGGER IF EXISTS studio_memory_fts_delete",
    "DROP TRIGGER IF EXISTS studio_memory_fts_update",
    "DROP TABLE IF EXISTS studio_memory_fts",
]


def add_search_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        from django.contrib.postgres.indexes import GinIndex
        from django.contrib.postgres.search import SearchVector

        memory = apps.get_model("studio", "Memory")
        index = GinIndex(SearchVector("text", config="simple"), name="memory_text_search")
        schema_editor.add_index(memory, index)
    elif connection.vendor == "sqlite":
        try:  # an SQLite built without FTS5: searches fall back to matching words
            with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
                for statement in SQLITE_FTS:
                    cursor.execute(statement)
        except OperationalError:  # "no such module: fts5"
            logging.getLogger("studio.memory").warning(
                "SQLite has no FTS5: memory search matches words without an index"
            )


def drop_search_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for statement in SQLITE_DROP:
                cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("studio", "0024_event_model_call_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Memory",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("agent", models.CharField(max_length=64)),
                ("text", models.TextField(max_length=2000)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memories",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="memories",
                        to="studio.session",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(
                        fields=["owner", "agent", "-created_at"], name="memory_by_agent"
                    )
                ],
            },
        ),
        migrations.RunPython(add_search_index, drop_search_index),
    ]
