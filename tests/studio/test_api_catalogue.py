from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from django.urls import URLResolver, get_resolver
from rest_framework.test import APIClient

from agents_core.specs import AgentSpec

pytestmark = pytest.mark.django_db


def test_tools_lists_every_registered_tool_with_its_settings_schema(api: APIClient) -> None:
    body = api.get("/api/tools/").json()
    by_name = {tool["name"]: tool for tool in body}
    assert {"calculator", "exit_loop"} <= set(by_name)
    assert by_name["calculator"]["description"].startswith("Evaluate an arithmetic expression")
    assert by_name["calculator"]["settings_schema"]["type"] == "object"


def test_every_setting_the_builder_draws_has_a_label_in_words(api: APIClient) -> None:
    """The builder labels a tool's or a hook's setting with its schema's title; pydantic's
    made-up one reads "Timeout S" for ``timeout_s``. Each is set, and a setting in
    seconds says so."""
    drawn = [*api.get("/api/tools/").json(), *api.get("/api/hooks/").json()]
    for item in drawn:
        for key, prop in (item.get("settings_schema") or {}).get("properties", {}).items():
            where = f"{item['name']}.{key}"
            assert prop.get("title"), where
            assert prop["title"] != key.replace("_", " ").title() or " " not in prop["title"], where
            if key.endswith("_s"):
                assert prop["title"].endswith("(s)"), where


def test_the_agent_spec_schema_is_the_pydantic_json_schema(api: APIClient) -> None:
    response = api.get("/api/agent-spec/schema/")
    assert response.status_code == 200
    assert response.json() == AgentSpec.model_json_schema()


def test_catalogues_need_authentication() -> None:
    assert APIClient().get("/api/tools/").status_code == 401
    assert APIClient().get("/api/agent-spec/schema/").status_code == 401


def test_the_openapi_schema_documents_every_endpoint() -> None:
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.1")
    assert {
        "/api/auth/token/",
        "/api/agents/",
        "/api/agents/{id}/",
        "/api/agents/{id}/versions/",
        "/api/agents/{id}/versions/{number}/",
        "/api/agents/{id}/export/",
        "/api/agents/import/",
        "/api/models/",
        "/api/models/{id}/",
        "/api/models/{id}/test/",
        "/api/sessions/",
        "/api/sessions/{id}/",
        "/api/sessions/{id}/events/",
        "/api/sessions/{id}/messages/",
        "/api/sessions/{id}/export/",
        "/api/runs/",
        "/api/runs/{id}/",
        "/api/runs/{id}/cancel/",
        "/api/tools/",
        "/api/agent-spec/schema/",
    } <= set(schema["paths"])
    model_config = schema["components"]["schemas"]["ModelConfig"]["properties"]
    assert "api_key" not in model_config


def test_the_schema_text_speaks_to_api_users_not_to_studios_developers() -> None:
    schema = yaml.safe_load(APIClient().get("/api/schema/").content)
    text = json.dumps(schema)
    for internal in ("owner_path", "For generic views", "A viewset that provides"):
        assert internal not in text
    for path in ("/api/agents/", "/api/sessions/", "/api/runs/", "/api/models/"):
        description = schema["paths"][path]["get"].get("description", "")
        assert description and "owner" not in description.split()[0].lower()


def test_the_schema_documents_a_spans_cost_as_a_decimal_string_that_may_be_unknown() -> None:
    schemas = yaml.safe_load(APIClient().get("/api/schema/").content)["components"]["schemas"]
    cost = schemas["Span"]["properties"]["cost"]
    assert cost["oneOf"] == [{"$ref": "#/components/schemas/SpanCost"}, {"type": "null"}]
    fields = schemas["SpanCost"]["properties"]
    assert fields["amount"]["type"] == ["string", "null"]
    assert fields["amount"]["format"] == "decimal"
    assert set(fields) == {"amount", "currency", "complete", "calls", "unknown"}


def test_the_schema_generates_without_warnings() -> None:
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


def test_the_docs_page_loads_swagger_ui_from_local_static_files_with_no_inline_script() -> None:
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert "<script>" not in html


def test_the_api_root_is_a_json_index_of_the_api(api: APIClient) -> None:
    response = api.get("/api/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    index = response.json()
    assert (index["docs"], index["schema"], index["token"]) == (
        "/api/docs/",
        "/api/schema/",
        "/api/auth/token/",
    )
    for url in index["resources"].values():
        assert api.get(url).status_code == 200, url
    assert APIClient().get("/api/").json()["code"] == "not_authenticated"
    # Every collection is listed: each route without a parameter that answers GET,
    # but for the index's own three, those that need a query to mean anything, and a
    # file download.
    not_collections = {
        "/api/costs/",
        "/api/evals/compare/",
        "/api/evals/history/",
        "/api/runs/compare/",
        "/api/approvals/decisions/export/",
    }
    listed = {index["docs"], index["schema"], index["token"], "/api/", *not_collections}
    listed |= set(index["resources"].values())
    for route in _routes(get_resolver("studio.api.urls").url_patterns, "/api/"):
        if route not in listed and "<" not in route:
            assert api.get(route).status_code == 405, f"{route} answers GET: list it"


def _routes(patterns: list[Any], prefix: str) -> Iterator[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, route)
        else:
            yield route
