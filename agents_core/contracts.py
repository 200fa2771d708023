"""Value types shared by every layer of the SDK.

These live outside the adapter packages (``llm``, ``tools``, ``sessions``) because
each adapter speaks them and adapters never import one another.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple, cast

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
    make = _makers.get(contract) or _maker(contract)
    return cast("M", make(values))


_makers: dict[type[BaseModel], Callable[[dict[str, Any]], BaseModel]] = {}
_new, _set = object.__new__, object.__setattr__


def _maker(contract: type[BaseModel]) -> Callable[[dict[str, Any]], BaseModel]:
    """``built`` for one contract: what it reads of the contract read once, and its
    shared fields sets kept by the fields' names alone (~0.45 us a contract less than
    looking them up by contract on every call; a streamed token builds three)."""
    template = _templates.get(contract) or _template(contract)
    defaults, factories = template.defaults, tuple(template.factories)
    frozen = bool(contract.model_config.get("frozen"))
    sets: dict[tuple[str, ...], set[str]] = {}

    def make(values: dict[str, Any]) -> BaseModel:
        data = defaults.copy()
        for name, factory in factories:
            if name not in values:
                data[name] = factory()
        data.update(values)
        instance = _new(contract)  # BaseModel has no __new__ of its own
        _set(instance, "__dict__", data)
        if frozen:
            fields = sets.get(key := tuple(values))
            if fields is None:
                fields = _fields_set(contract, values)  # the one ``replaced`` shares, too
                if len(sets) < SHARED_FIELDS_SETS:
                    sets[key] = fields
        else:
            fields = set(values)
        _set(instance, "__pydantic_fields_set__", fields)
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance

    _makers[contract] = make
    return make


def replaced[M: BaseModel](instance: M, /, **values: Any) -> M:
    """``instance.model_copy(update=values)`` for a session service stamping the ``seq``
    it assigned on every stored event: a shallow copy with ``values`` set, not
    validated (as ``model_copy``), whose fields set is shared as ``built`` shares it,
    in a key-sharing ``__dict__`` (``_Template.shared``), as a store keeps it.
    Same rule as ``built``: ``values`` must already be what validation would produce."""
    model = type(instance)
    data = _kept_dict(instance)  # refuses models with private or extra attributes
    data.update(values)
    copy = model.__new__(model)
    object.__setattr__(copy, "__dict__", data)
    fields = dict.fromkeys(instance.__pydantic_fields_set__) | dict.fromkeys(values)
    object.__setattr__(copy, "__pydantic_fields_set__", _fields_set(model, fields))
    object.__setattr__(copy, "__pydantic_extra__", None)
    object.__setattr__(copy, "__pydantic_private__", None)
    return copy


def compact_model(instance: BaseModel) -> None:
    """Give ``instance``, and the contracts it holds (directly or in a list), the fields
    sets ``built`` shares and the key-sharing ``__dict__`` of ``replaced``, in place of
    what validation made for each: for what a store keeps many of. A validated event's own
    set (every field of its wire form) is ~2.3 KiB of its ~5.3, and its dict 832 bytes
    where a key-sharing one takes 296. Only frozen contracts are compacted (pydantic
    changes the set only on assignment, which they refuse)."""
    model = type(instance)
    every = _every_field.get(model)
    if every is None:
        every = _every_field_of(model)
    if every:
        fields = instance.__pydantic_fields_set__
        if fields is not every:
            shared = (
                every if len(fields) == len(every) else _fields_set(model, dict.fromkeys(fields))
            )
            object.__setattr__(instance, "__pydantic_fields_set__", shared)
        object.__setattr__(instance, "__dict__", _kept_dict(instance))
    models = _models  # is a type a model: asked once per type (isinstance would go
    # through pydantic's ABC metaclass, ~1 us a value that is not a model)
    for value in instance.__dict__.values():
        kind = type(value)
        if kind is list:
            for item in value:
                if models.get(type(item), True) and _is_model(type(item)):
                    compact_model(item)
        elif models.get(kind, True) and _is_model(kind):
            compact_model(value)


_models: dict[type, bool] = {}
_every_field: dict[type[BaseModel], set[str]] = {}


def _is_model(kind: type) -> bool:
    found = _models.get(kind)
    if found is None:
        found = _models[kind] = issubclass(kind, BaseModel)
    return found


def _every_field_of(model: type[BaseModel]) -> set[str]:
    """The shared set of all of a frozen contract's fields; empty for any other model
    (and for one ``built`` refuses: private or extra attributes)."""
    kept = _plain(model) and model.model_config.get("frozen")
    every = set(model.model_fields) if kept else set()
    _every_field[model] = every
    return every


class _Template(NamedTuple):
    """What ``built`` and ``replaced`` start a contract's ``__dict__`` from."""

    defaults: dict[str, Any]
    """Every field in declaration order with its default (``None`` for a factory's)."""
    factories: list[tuple[str, Callable[[], Any]]]
    """The fields whose default comes from a factory."""
    shared: dict[str, Any]
    """``defaults`` as a key-sharing dict, where that is smaller (a contract of many
    fields): CPython keeps its keys once, on a class, and a copy of it is one too as
    long as no other key is added. An event's takes 296 bytes where a plain one takes
    832, but reading an attribute through it costs ~3x
    (CPython 3.12 does not specialise attribute reads on one held in a ``__dict__``
    slot, as pydantic's are). So only what is kept is given one: what a store keeps
    (``replaced``, ``compact_model``), not what a turn makes and reads (``built``)."""


_templates: dict[type[BaseModel], _Template] = {}
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


def _plain(model: type[BaseModel]) -> bool:
    """Whether all of ``model``'s state is its fields: no private or extra attributes."""
    return not model.__private_attributes__ and model.model_config.get("extra") != "allow"


def _kept_dict(instance: BaseModel) -> dict[str, Any]:
    """A copy of ``instance``'s fields in its contract's key-sharing dict (``_Template``)."""
    model = type(instance)
    data = (_templates.get(model) or _template(model)).shared.copy()
    data.update(instance.__dict__)
    return data


def _template(model: type[BaseModel]) -> _Template:
    if not _plain(model):
        raise TypeError(f"{model.__name__} has private or extra attributes: validate it")
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    # The key-sharing dict is made on an instance of a plain class of its own, one
    # attribute at a time: the model's class may have lost its shared keys already
    # (validating a dict of every field before any instance was made this way does).
    holder = type(f"_{model.__name__}Fields", (), {})()
    for name, info in model.model_fields.items():
        defaults[name] = None if info.default_factory else info.default
        if info.default_factory is not None:
            factories.append((name, info.default_factory))  # type: ignore[arg-type]
        setattr(holder, name, defaults[name])
    shared = holder.__dict__
    if sys.getsizeof(shared) >= sys.getsizeof(defaults):
        shared = defaults  # a few fields: the values array of ~30 slots costs more
    template = _templates[model] = _Template(defaults, factories, shared)
    return template


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
