"""Full-text search over a user's memories: FTS5 on SQLite, ``to_tsvector`` with a GIN
index on PostgreSQL (both made by migration 0023), and on an SQLite without FTS5 a
plain match of each word. A query matches memories sharing any of its words, best
first; every search is scoped to one owner."""

from __future__ import annotations

import re
from functools import reduce

from django.db import connection
from django.db.models import QuerySet

from studio.models import Memory

FTS_TABLE = "studio_memory_fts"
_WORD = re.compile(r"\w+")
MAX_QUERY_WORDS = 16


def words(query: str) -> list[str]:
    """The query's distinct words, at most ``MAX_QUERY_WORDS``: nothing else of it
    reaches the search syntax of either database."""
    seen = dict.fromkeys(word.lower() for word in _WORD.findall(query))
    return list(seen)[:MAX_QUERY_WORDS]


def search(owner_id: int, agent: str | None, query: str, limit: int) -> list[Memory]:
    """``owner_id``'s memories (of ``agent`` only, when given) matching ``query``'s
    words, best first; the newest ones when it has none."""
    owned = Memory.objects.filter(owner_id=owner_id).select_related("session")
    if agent:
        owned = owned.filter(agent=agent)
    found = words(query)
    if not found:
        return list(owned[:limit])
    if connection.vendor == "postgresql":
        return _postgres(owned, found, limit)
    if connection.vendor == "sqlite" and has_fts():
        return _fts5(owned, _ranked(owner_id, agent, found, limit), limit)
    return _plain(owned, found, limit)


_FTS_PRESENT: dict[str, bool] = {}


def has_fts() -> bool:
    """Whether this SQLite database has the FTS5 table (its build may lack FTS5)."""
    key = str(connection.settings_dict["NAME"])
    if key not in _FTS_PRESENT:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name=%s", [FTS_TABLE]
            )
            _FTS_PRESENT[key] = cursor.fetchone() is not None
    return _FTS_PRESENT[key]


def _ranked(owner_id: int, agent: str | None, found: list[str], limit: int) -> list[int]:
    """The ids of the owner's best matches, best first (FTS5's bm25 ``rank``)."""
    match = " OR ".join(f'"{word}"' for word in found)  # \w+ only: no quote inside
    sql = (
        "SELECT m.id FROM studio_memory_fts f JOIN studio_memory m ON m.id = f.rowid "
        "WHERE studio_memory_fts MATCH %s AND m.owner_id = %s AND (%s = '' OR m.agent = %s) "
        "ORDER BY f.rank LIMIT %s"
    )
    params: list[str | int] = [match, owner_id, agent or "", agent or "", limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def _fts5(owned: QuerySet[Memory], ranked: list[int], limit: int) -> list[Memory]:
    rows = owned.in_bulk(ranked)
    return [rows[pk] for pk in ranked if pk in rows][:limit]


def _postgres(owned: QuerySet[Memory], found: list[str], limit: int) -> list[Memory]:
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = SearchVector("text", config="simple")
    query = reduce(
        lambda a, b: a | b,
        (SearchQuery(word, config="simple", search_type="plain") for word in found),
    )
    matched = owned.annotate(found=vector).filter(found=query)
    return list(matched.annotate(rank=SearchRank(vector, query)).order_by("-rank", "-id")[:limit])


def _plain(owned: QuerySet[Memory], found: list[str], limit: int) -> list[Memory]:
    from django.db.models import Q

    return list(
        owned.filter(reduce(lambda a, b: a | b, (Q(text__icontains=w) for w in found)))[:limit]
    )
