"""Value types shared by every layer of the SDK.

These live outside the adapter packages (``llm``, ``tools``, ``sessions``) because
each adapter speaks them and adapters never import one another.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, model_validator


class Contract(BaseModel):
    """Base of every boundary model: unknown fields are an error, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def built[M: BaseModel](contract: type[M], /, **values: Any) -> M:
    """A ``contract`` from values the SDK made itself, without validating them again.

    For hot paths only (the runner's own events, the request an agent assembles from
    contracts it holds): every value must already be what validation would produce.
    Unset fields get their defaults, as ``model_construct`` gives them, but from a dict
    made once per contract (``model_construct`` walks the fields in Python on every call
    and costs several times a validation here). Anything from outside is validated.

    Instances of a frozen contract built with the same fields share one set of the
    fields set (pydantic changes that set only on assignment, which a frozen model
    refuses, and copies it in ``model_copy``): a stored event then keeps one object
    fewer for the garbage collector to walk.
    """
    defaults, factories = _templates.get(contract) or _template(contract)
    data = defaults.copy()
    for name, factory in factories:
        if name not in values:
            data[name] = factory()
    data.update(values)
    instance = contract.__new__(contract)
    object.__setattr__(instance, "__dict__", data)
    object.__setattr__(instance, "__pydantic_fields_set__", _fields_set(contract, values))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


def replaced[M: BaseModel](instance: M, /, **values: Any) -> M:
    """``instance.model_copy(update=values)`` for a session service stamping the ``seq``
    it assigned on every stored event: a shallow copy with ``values`` set, not
    validated (as ``model_copy``), whose fields set is shared as ``built`` shares it.
    Same rule as ``built``: ``values`` must already be what validation would produce."""
    model = type(instance)
    if model not in _templates:
        _template(model)  # refuses models with private or extra attributes
    data = instance.__dict__.copy()
    data.update(values)
    copy = model.__new__(model)
    object.__setattr__(copy, "__dict__", data)
    fields = dict.fromkeys(instance.__pydantic_fields_set__) | dict.fromkeys(values)
    object.__setattr__(copy, "__pydantic_fields_set__", _fields_set(model, fields))
    object.__setattr__(copy, "__pydantic_extra__", None)
    object.__setattr__(copy, "__pydantic_private__", None)
    return copy


def share_fields_sets(instance: BaseModel) -> None:
    """Give ``instance``, and the contracts it holds (directly or in a list), the fields
    sets ``built`` shares, in place of the sets validation made for each: for what a
    store keeps many of. A validated event's own set (every field of its wire form) is
    ~2.3 KiB of its ~5.3; with its parts' and actions' sets shared too, a kept event
    takes ~1.9 KiB. Only frozen contracts share theirs (pydantic changes the set only
    on assignment, which they refuse)."""
    model = type(instance)
    every = _every_field.get(model)
    if every is None:
        every = _every_field_of(model)
    fields = instance.__pydantic_fields_set__
    if every and fields is not every:
        shared = every if len(fields) == len(every) else _fields_set(model, dict.fromkeys(fields))
        object.__setattr__(instance, "__pydantic_fields_set__", shared)
    models = _models  # is a type a model: asked once per type (isinstance would go
    # through pydantic's ABC metaclass, ~1 us a value that is not a model)
    for value in instance.__dict__.values():
        kind = type(value)
        if kind is list:
            for item in value:
                if models.get(type(item), True) and _is_model(type(item)):
                    share_fields_sets(item)
        elif models.get(kind, True) and _is_model(kind):
            share_fields_sets(value)


_models: dict[type, bool] = {}
_every_field: dict[type[BaseModel], set[str]] = {}


def _is_model(kind: type) -> bool:
    found = _models.get(kind)
    if found is None:
        found = _models[kind] = issubclass(kind, BaseModel)
    return found


def _every_field_of(model: type[BaseModel]) -> set[str]:
    """The shared set of all of a frozen contract's fields; empty for any other model."""
    every = set(model.model_fields) if model.model_config.get("frozen") else set()
    _every_field[model] = every
    return every


_templates: dict[type[BaseModel], tuple[dict[str, Any], list[tuple[str, Callable[[], Any]]]]] = {}
_shared_sets: dict[tuple[type[BaseModel], tuple[str, ...]], set[str]] = {}
SHARED_FIELDS_SETS = 1024
"""Distinct (contract, fields) pairs whose fields set ``built`` shares; the SDK's hot
paths use a few dozen."""


def _fields_set(contract: type[BaseModel], values: dict[str, Any]) -> set[str]:
    if not contract.model_config.get("frozen"):
        return set(values)
    key = (contract, tuple(values))
    shared = _shared_sets.get(key)
    if shared is None:
        shared = set(values)
        if len(_shared_sets) < SHARED_FIELDS_SETS:
            _shared_sets[key] = shared
    return shared


def _template(
    model: type[BaseModel],
) -> tuple[dict[str, Any], list[tuple[str, Callable[[], Any]]]]:
    """Every field of ``model`` in declaration order with its default, and the fields
    whose default comes from a factory."""
    if model.__private_attributes__ or model.model_config.get("extra") == "allow":
        raise TypeError(f"{model.__name__} has private or extra attributes: validate it")
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, info in model.model_fields.items():
        defaults[name] = None if info.default_factory else info.default
        if info.default_factory is not None:
            factories.append((name, info.default_factory))  # type: ignore[arg-type]
    _templates[model] = defaults, factories
    return defaults, factories


class Usage(Contract):
    """Token usage of one model call (or a sum of several)."""

    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cached_input_tokens: NonNegativeInt = 0
    """The part of ``input_tokens`` the provider served from its prompt cache (charged
    at a cached-input price, where the model has one)."""
    reasoning_tokens: NonNegativeInt = 0
    """The part of ``output_tokens`` the model spent thinking (reported by providers
    that count it apart, e.g. OpenAI's reasoning models)."""

    @model_validator(mode="after")
    def _cached_within_input(self) -> Usage:
        if self.cached_input_tokens > self.input_tokens:
            raise ValueError(
                f"cached_input_tokens ({self.cached_input_tokens}) is part of input_tokens"
                f" ({self.input_tokens}), so cannot exceed it"
            )
        return self

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return built(  # sums of valid usages are valid: not validated again
            Usage,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class Cost(Contract):
    """What a model call cost, in ``currency`` (an ISO 4217 code). The SDK never prices
    anything: a session store that knows the model's price stamps it on the stored
    event (``Event.cost``); written as a decimal string on the wire."""

    amount: Decimal = Field(ge=0)
    currency: str = Field(pattern=r"^[A-Z]{3}$")


class ToolCall(Contract):
    """A model's request to run one tool. ``id`` pairs it with its result."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResult(Contract):
    """What one tool call produced; ``is_error`` results are shown to the model too."""

    call_id: str = Field(min_length=1)
    name: str
    output: str
    is_error: bool = False


class ToolSchema(Contract):
    """What a model is told about one tool: its name, purpose and JSON Schema arguments."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
