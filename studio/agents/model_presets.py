"""Presets the model form starts from: well-known OpenAI-compatible endpoints with their
base URL and a model name filled in (until Studio has native providers for them). They
only fill the form; the user can still change every field, and saving checks the
result like any other config."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from studio.models import ModelConfig


@dataclass(frozen=True, slots=True)
class ModelPreset:
    id: str
    label: str
    name: str
    """The config name suggested when the form has none yet."""
    base_url: str
    model: str
    note: str
    provider: str = ModelConfig.Provider.OPENAI_COMPATIBLE

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


PRESETS = (
    ModelPreset(
        id="openai",
        label="OpenAI",
        name="openai",
        base_url="https://api.openai.com/v1",
        model="gpt-4o-mini",
        note="Needs an OpenAI API key (platform.openai.com, API keys).",
    ),
    ModelPreset(
        id="anthropic",
        label="Anthropic (OpenAI-compatible endpoint)",
        name="claude",
        base_url="https://api.anthropic.com/v1/",
        model="claude-sonnet-4-5",
        note="Needs an Anthropic API key (console.anthropic.com). Anthropic's "
        "OpenAI-compatible endpoint ignores some options.",
    ),
    ModelPreset(
        id="ollama",
        label="Ollama on this machine",
        name="ollama",
        base_url="http://127.0.0.1:11434/v1",
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


def preset_for(base_url: str) -> ModelPreset | None:
    """The preset a stored config was made from, judged by its base URL."""
    wanted = base_url.rstrip("/")
    return next((p for p in PRESETS if wanted and p.base_url.rstrip("/") == wanted), None)
