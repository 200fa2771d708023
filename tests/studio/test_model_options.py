"""A model config's provider options through the API: every provider's options are
checked field by field, each error at its option's path in words; what the model form
offers per provider is exactly what saving accepts; presets name the native providers
and a stored config is matched to its preset by provider and base URL."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from studio.agents.llms import OPTIONS_MODELS
from studio.agents.model_presets import PRESETS, preset_for
from studio.models import ModelConfig
from studio.web.model_options import option_fields

pytestmark = pytest.mark.django_db

BAD_OPTIONS: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "openai_compatible": (
        {"temperature": 3, "reasoning_effort": "extreme", "stop": ["a", "b", "c", "d", "e"]},
        {
            "options.temperature": "Input should be less than or equal to 2",
            "options.reasoning_effort": "Input should be 'minimal', 'low', 'medium' or 'high'",
            "options.stop": "List should have at most 4 items after validation, not 5",
        },
    ),
    "anthropic": (
        {"max_tokens": 2048, "thinking_budget": 4096, "reasoning_effort": "low"},
        {
            "options.thinking_budget": "the thinking budget must be less than max_tokens",
            "options.reasoning_effort": "not an option of Anthropic models (timeout_s, "
            "streaming, max_tokens, temperature, top_p, top_k, stop_sequences, "
            "thinking_budget, vision)",
        },
    ),
    "gemini": (
        {"thinking_budget": -1, "max_output_tokens": 0},
        {
            "options.thinking_budget": "Input should be greater than or equal to 0",
            "options.max_output_tokens": "Input should be greater than 0",
        },
    ),
    "ollama": (
        {"num_ctx": "big", "vision": "sometimes"},
        {
            "options.num_ctx": "Input should be a valid integer, unable to parse string as "
            "an integer",
            "options.vision": "Input should be a valid boolean, unable to interpret input",
        },
    ),
}

GOOD_OPTIONS: dict[str, dict[str, Any]] = {
    "openai_compatible": {"temperature": 0.2, "max_tokens": 800, "reasoning_effort": "low"},
    "anthropic": {"max_tokens": 4096, "thinking_budget": 2048, "vision": False},
    "gemini": {"max_output_tokens": 2048, "thinking_budget": 0, "stop": ["END"]},
    "ollama": {"num_ctx": 8192, "keep_alive": "10m", "vision": True, "timeout_s": 30},
}


def payload(provider: str, options: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": f"m-{provider}",
        "provider": provider,
        "base_url": "http://127.0.0.1:9",
        "model": "some-model",
        "api_key": "sk-0123456789abcdef",
        "options": options,
    }


@pytest.mark.parametrize("provider", sorted(BAD_OPTIONS))
def test_each_bad_option_is_refused_at_its_own_path_in_words(api: APIClient, provider: str) -> None:
    options, expected = BAD_OPTIONS[provider]
    response = api.post("/api/models/", payload(provider, options), format="json")
    assert response.status_code == 400
    errors = {e["path"]: e["detail"] for e in response.json()["errors"]}
    assert errors == expected
    assert not ModelConfig.objects.exists()  # nothing stored half-way


@pytest.mark.parametrize("provider", sorted(GOOD_OPTIONS))
def test_good_options_are_stored_as_sent(api: APIClient, provider: str) -> None:
    response = api.post("/api/models/", payload(provider, GOOD_OPTIONS[provider]), format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["options"] == GOOD_OPTIONS[provider]


def test_a_thinking_budget_with_a_temperature_is_refused_at_the_budget(api: APIClient) -> None:
    options = {"max_tokens": 4096, "thinking_budget": 2048, "temperature": 0.5}
    response = api.post("/api/models/", payload("anthropic", options), format="json")
    assert response.json()["errors"] == [
        {
            "path": "options.thinking_budget",
            "code": "value_error",
            "detail": "with a thinking budget, temperature and top_k must be unset",
        }
    ]


def test_the_form_offers_exactly_the_options_each_provider_accepts() -> None:
    fields = option_fields()
    assert set(fields) == set(OPTIONS_MODELS)
    for provider, model in OPTIONS_MODELS.items():
        assert sorted(f["name"] for f in fields[provider]) == sorted(model.model_fields)
    anthropic = {f["name"]: f for f in fields["anthropic"]}
    assert anthropic["thinking_budget"]["kind"] == "integer"
    assert anthropic["thinking_budget"]["bounds"] == "at least 1024"
    assert (anthropic["vision"]["kind"], anthropic["vision"]["default"]) == ("bool", True)
    assert anthropic["stop_sequences"]["kind"] == "lines"
    openai = {f["name"]: f for f in fields["openai_compatible"]}
    assert openai["reasoning_effort"]["choices"] == ["minimal", "low", "medium", "high"]
    assert openai["temperature"]["bounds"] == "0 to 2"
    assert {f["name"]: f["kind"] for f in fields["ollama"]}["keep_alive"] == "text"


def test_presets_use_the_native_providers() -> None:
    by_id = {p.id: p for p in PRESETS}
    assert {p.id: p.provider for p in PRESETS} == {
        "openai": "openai_compatible",
        "anthropic": "anthropic",
        "gemini": "gemini",
        "ollama": "ollama",
    }
    assert by_id["anthropic"].base_url == "https://api.anthropic.com"
    assert by_id["ollama"].base_url == "http://127.0.0.1:11434"
    assert by_id["gemini"].base_url == "https://generativelanguage.googleapis.com"


@pytest.mark.parametrize(
    ("provider", "base_url", "preset"),
    [
        ("anthropic", "https://api.anthropic.com/", "anthropic"),
        ("anthropic", "", "anthropic"),  # the provider's own service
        ("openai_compatible", "https://api.anthropic.com/v1/", None),  # the old preset
        ("openai_compatible", "", "openai"),
        ("ollama", "http://127.0.0.1:11434", "ollama"),
        ("openai_compatible", "http://127.0.0.1:11434/v1", None),
        ("gemini", "http://localhost:8080", None),
        ("scripted", "", None),
    ],
)
def test_a_stored_config_is_matched_to_its_preset_by_provider_and_base_url(
    provider: str, base_url: str, preset: str | None
) -> None:
    found = preset_for(provider, base_url)
    assert (found.id if found else None) == preset


def test_the_edit_page_names_the_preset_a_config_was_made_from(ada: User) -> None:
    config = ModelConfig.objects.create(
        owner=ada, name="claude", provider="anthropic", model="claude-sonnet-4-5"
    )
    client = Client()
    client.force_login(ada)
    page = client.get(f"/models/{config.pk}/").content.decode()
    assert '<option value="anthropic" selected>Anthropic</option>' in page
    assert "Messages API" in page  # the preset's note
