"""Text no database can store is refused at the API's edge, not by the database."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.studio.conftest import make_agent


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/api/agents/",
            {"name": "a", "spec": {"name": "a", "model": "scripted", "instruction": "\x00"}},
        ),
        (
            "/api/agents/import/",
            {
                "format": "studio.agent",
                "format_version": 1,
                "name": "a",
                "spec": {"name": "a", "model": "scripted", "description": "\x00"},
            },
        ),
        (
            "/api/models/",
            {"name": "m", "provider": "scripted", "options": {"script": [{"text": "\x00"}]}},
        ),
        (
            "/api/models/",
            {"name": "m", "provider": "scripted", "options": {"script": [{"text": "\ud800"}]}},
        ),
        ("/api/models/", {"name": "m\ud800", "provider": "scripted"}),
        (
            "/api/agents/",
            {"name": "a", "description": "\x00", "spec": {"name": "a", "model": "scripted"}},
        ),
        (
            "/api/agents/",
            {"name": "a", "spec": {"name": "a", "model": "scripted", "instruction": "\ud800"}},
        ),
    ],
)
def test_text_no_database_can_store_is_refused(api: Any, ada: User, path: str, body: Any) -> None:
    """PostgreSQL stores neither NUL nor a lone surrogate, in text or in JSON: both are
    refused with a 400 (storing them raised there; the PostgreSQL pass runs this)."""
    make_agent(ada)
    response = api.post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid"
