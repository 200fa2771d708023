"""Presets the model form starts from: well-known services, each through its own
provider (OpenAI-compatible only where the service really speaks that API), with the
base URL and a model name filled in. They only fill the form; the user can still change
every field, and saving checks the result like any other config."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from studio.agents.providers import PROVIDERS
from studio.models import ModelConfig

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where an OpenAI-compatible config without a base URL sends its requests."""


@dataclass(frozen=True, slots=True)
class ModelPreset:
    id: str
    label: str
    name: str
    """The config name suggested when the form has none yet."""
    provider: str
    base_url: str
    model: str
    note: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


PRESETS = (
    ModelPreset(
        id="openai",
        label="OpenAI",
        name="openai",
        provider=ModelConfig.Provider.OPENAI_COMPATIBLE,
        base_url=OPENAI_BASE_URL,
        model="gpt-4o-mini",
        note="Needs an OpenAI API key (platform.openai.com, API keys).",
    ),
    ModelPreset(
        id="anthropic",
        label="Anthropic",
        name="claude",
        provider=ModelConfig.Provider.ANTHROPIC,
        base_url=PROVIDERS["anthropic"].default_base_url,
        model="claude-sonnet-4-5",
        note="Needs an Anthropic API key (console.anthropic.com). Speaks Anthropic's own "
        "Messages API: extended thinking and images included.",
    ),
    ModelPreset(
        id="gemini",
        label="Google Gemini",
        name="gemini",
        provider=ModelConfig.Provider.GEMINI,
        base_url=PROVIDERS["gemini"].default_base_url,
        model="gemini-2.5-flash",
        note="Needs a Gemini API key (aistudio.google.com, Get API key).",
    ),
    ModelPreset(
        id="ollama",
        label="Ollama on this machine",
        name="ollama",
        provider=ModelConfig.Provider.OLLAMA,
        base_url=PROVIDERS["ollama"].default_base_url,
        model="llama3.2",
        note="No API key needed: run Ollama and pull the model first (ollama pull llama3.2).",
    ),
)


CUSTOM_NOTE = (
    "Any OpenAI-compatible endpoint, Anthropic, Google Gemini or Ollama through its own "
    "API, or a scripted model that runs offline. A preset fills in the provider, base URL "
    "and model; you can change any of them."
)
"""What the form says while no preset is chosen."""


def default_base_url(provider: str) -> str:
    """Where a config of ``provider`` with no base URL sends its requests ("" for the
    scripted model, which sends none)."""
    if provider in PROVIDERS:
        return PROVIDERS[provider].default_base_url
    if provider == ModelConfig.Provider.OPENAI_COMPATIBLE:
        return OPENAI_BASE_URL
    return ""


def preset_for(provider: str, base_url: str) -> ModelPreset | None:
    """The preset a stored config was made from, judged by its provider and the base URL
    it talks to (an empty one is the provider's own service)."""
    wanted = (base_url or default_base_url(provider)).rstrip("/")
    if not wanted:
        return None
    return next(
        (p for p in PRESETS if p.provider == provider and p.base_url.rstrip("/") == wanted),
        None,
    )
