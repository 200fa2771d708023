"""The model form's inputs for a provider's options: one labelled input per option the
provider's options model accepts (``studio.agents.llms.OPTIONS_MODELS``), its kind,
bounds and default read from that model, so the form offers exactly what saving
accepts. Only the label, the help and whether the input shows at once or under "More
options" are written here."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from studio.agents.llms import OPTIONS_MODELS
from studio.models import ModelConfig

Kind = Literal["number", "integer", "text", "choice", "bool", "lines", "json"]


class Label(NamedTuple):
    label: str
    help: str = ""
    more: bool = False
    """Shown under "More options" (sampling details most configs leave alone)."""


_TEMPERATURE = Label("Temperature", "Lower is steadier, higher more varied.")
_TIMEOUT = Label("Timeout (seconds)", "How long one model call may take.")
_STREAMING = Label("Stream the answer", "Word by word as it is written.", more=True)
_TOP_P = Label("Top p", "Nucleus sampling: leave empty, or set it instead of temperature.", True)
_TOP_K = Label("Top k", "Sample from the k likeliest tokens only.", more=True)
_SEED = Label("Seed", "The same seed repeats an answer, where the model allows.", more=True)
_STOP = Label("Stop sequences", "One per line: the answer ends before any of them.", more=True)

LABELS: dict[str, dict[str, Label]] = {
    ModelConfig.Provider.OPENAI_COMPATIBLE: {
        "temperature": _TEMPERATURE,
        "max_tokens": Label("Max output tokens", "The longest answer, in tokens."),
        "reasoning_effort": Label(
            "Reasoning effort", "Reasoning models only: how hard to think before answering."
        ),
        "timeout_s": _TIMEOUT,
        "vision": Label("Takes images", "Attachments are sent to this model."),
        "top_p": _TOP_P,
        "seed": _SEED,
        "stop": _STOP,
        "frequency_penalty": Label("Frequency penalty", "Discourages repeated tokens.", True),
        "presence_penalty": Label("Presence penalty", "Encourages new topics.", True),
        "streaming": _STREAMING,
    },
    ModelConfig.Provider.ANTHROPIC: {
        "max_tokens": Label("Max output tokens", "The longest answer, thinking included."),
        "temperature": _TEMPERATURE,
        "thinking_budget": Label(
            "Thinking budget (tokens)",
            "Extended thinking, streamed as the model thinks; below max output tokens, "
            "with temperature and top k unset.",
        ),
        "timeout_s": _TIMEOUT,
        "vision": Label("Takes images and PDFs", "Every current Claude model does."),
        "top_p": _TOP_P,
        "top_k": _TOP_K,
        "stop_sequences": _STOP,
        "streaming": _STREAMING,
    },
    ModelConfig.Provider.GEMINI: {
        "max_output_tokens": Label("Max output tokens", "The longest answer, in tokens."),
        "temperature": _TEMPERATURE,
        "thinking_budget": Label(
            "Thinking budget (tokens)", "0 turns thinking off, where the model allows."
        ),
        "timeout_s": _TIMEOUT,
        "vision": Label("Takes images", "Attachments are sent to this model."),
        "top_p": _TOP_P,
        "top_k": _TOP_K,
        "stop": _STOP,
        "streaming": _STREAMING,
    },
    ModelConfig.Provider.OLLAMA: {
        "num_ctx": Label("Context window (tokens)", "num_ctx: how much the model reads."),
        "num_predict": Label(
            "Max output tokens", "num_predict: -1 without limit, -2 until the context fills."
        ),
        "temperature": _TEMPERATURE,
        "keep_alive": Label(
            "Keep loaded", "keep_alive: seconds, or a duration such as 10m; -1 for ever."
        ),
        "timeout_s": _TIMEOUT,
        "vision": Label("Takes images", "Turn on for a multimodal model (llava, gemma3)."),
        "top_p": _TOP_P,
        "top_k": _TOP_K,
        "seed": _SEED,
        "stop": _STOP,
        "streaming": _STREAMING,
    },
    ModelConfig.Provider.SCRIPTED: {
        "latency_s": Label("Pause before each answer (seconds)"),
        "token_delay_s": Label("Pause between words (seconds)"),
        "loop": Label("Start the script again when it ends"),
        "script": Label(
            "Script (JSON)",
            "A list of answers to give in turn. Empty: follow the agent's instruction "
            "(its Reply: lines).",
            more=True,
        ),
    },
}


def option_fields() -> dict[str, list[dict[str, Any]]]:
    """Every provider's option inputs, in the order the form shows them."""
    return {provider: _fields(OPTIONS_MODELS[provider], LABELS[provider]) for provider in LABELS}


def _fields(model: type[BaseModel], labels: dict[str, Label]) -> list[dict[str, Any]]:
    properties = model.model_json_schema()["properties"]
    return [
        {"name": name, **label._asdict(), **_shape(properties[name])}
        for name, label in labels.items()
    ]


def _shape(schema: dict[str, Any]) -> dict[str, Any]:
    """An option's kind, default, choices and bounds, from its JSON schema."""
    branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]
    types = {b.get("type") for b in branches}
    first = branches[0]
    shape: dict[str, Any] = {"kind": _kind(types, first), "default": schema.get("default")}
    if "enum" in first:
        shape["choices"] = first["enum"]
    shape["bounds"] = _bounds(first, shape["kind"])
    return shape


def _kind(types: set[Any], first: dict[str, Any]) -> Kind:
    if "enum" in first:
        return "choice"
    if types == {"array"} and first.get("items", {}).get("type") == "string":
        return "lines"
    simple: dict[frozenset[Any], Kind] = {
        frozenset({"boolean"}): "bool",
        frozenset({"integer"}): "integer",
        frozenset({"number"}): "number",
        frozenset({"string", "integer"}): "text",
    }
    return simple.get(frozenset(types), "json")


def _bounds(schema: dict[str, Any], kind: Kind) -> str:
    """The allowed range in words: "0 to 2", "at least 1", "above 0, at most 1"."""
    if "maxItems" in schema:
        return f"at most {schema['maxItems']} entries"
    low = high = ""
    if "minimum" in schema:
        low = f"at least {schema['minimum']:g}"
    elif "exclusiveMinimum" in schema:
        bound = schema["exclusiveMinimum"]
        low = f"at least {bound + 1:g}" if kind == "integer" else f"above {bound:g}"
    if "maximum" in schema:
        high = f"at most {schema['maximum']:g}"
    if low.startswith("at least") and high:
        return f"{low.removeprefix('at least ')} to {high.removeprefix('at most ')}"
    return ", ".join(part for part in (low, high) if part)
