"""Custom evaluators: checks written in Python, named by a ``custom`` spec.

Register one with the decorator; it gets the case, the outcome and the spec's
``params``, and returns a ``Verdict`` (sync or async)::

    class City(BaseModel):
        city: str = Field(min_length=1, description="The city the answer must name.")

    @register_evaluator("mentions_city", description="The answer names a city.", params=City)
    def mentions_city(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        ...

``params``, a pydantic model, is the evaluator's typed contract: an eval naming it
with parameters the model refuses is refused before any case runs
(``params_problems``), the evaluator gets them validated (defaults filled in), and
the catalogue lists its fields (``RegisteredEvaluator.params``). Without one, the
parameters reach it as given.

An async function runs on the event loop (it must not block it); a plain one runs in a
worker thread, so it may take its time, but must not touch the loop's objects.

Any ``Verdict`` it returns is shown under the spec's label (else ``custom:<name>``).
Its failures stay its own (error isolation): an exception raised inside it, or a
return value that is not a ``Verdict``, makes an ``error`` verdict that says so, and
the other evaluators of the case still run. An unknown name is an error verdict too.

Two built-in evaluators are registered on import: ``no_error`` (the run ended without
an error) and ``max_words`` (the final output has at most ``max`` words).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents_core.evals.contracts import Case, CustomSpec, Outcome, Verdict
from agents_core.evals.output_checks import decided, errored, label_of

__all__ = [
    "CustomEvaluator",
    "EvaluatorFn",
    "ParamField",
    "RegisteredEvaluator",
    "params_problems",
    "register_evaluator",
    "registered",
    "run_custom",
    "unregister_evaluator",
]

EvaluatorFn = Callable[[Case, Outcome, dict[str, Any]], Verdict | Awaitable[Verdict]]
"""A custom evaluator: ``(case, outcome, params) -> Verdict``, sync or async."""

_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,99}$")


@dataclass(frozen=True, slots=True)
class ParamField:
    """One parameter of a custom evaluator, as its params model declares it."""

    name: str
    required: bool
    description: str
    default: Any = None
    """Its default (as JSON) when not ``required``."""


@dataclass(frozen=True, slots=True)
class RegisteredEvaluator:
    """What the UI lists of a custom evaluator."""

    name: str
    description: str
    params: tuple[ParamField, ...] | None = None
    """Its parameters, when it declares a params model; ``None``: it takes any."""


@dataclass(frozen=True, slots=True)
class CustomEvaluator:
    name: str
    description: str
    fn: EvaluatorFn
    params: type[BaseModel] | None = None


_registry: dict[str, CustomEvaluator] = {}
_lock = threading.Lock()


def register_evaluator(
    name: str, *, description: str = "", params: type[BaseModel] | None = None
) -> Callable[[EvaluatorFn], EvaluatorFn]:
    """Register the decorated function as the custom evaluator ``name`` (lower case
    letters, digits, ``_``, ``.``, ``-``), taking the parameters ``params`` validates
    (any, without it). Registering a name twice is an error, unless it is the same
    function again (a module imported twice)."""
    if not _NAME.match(name):
        raise ValueError(
            f"evaluator name {name!r}: use lower case letters, digits, '_', '.' or '-', "
            "starting with a letter (at most 100 characters)"
        )

    def register(fn: EvaluatorFn) -> EvaluatorFn:
        said = description or inspect.getdoc(fn) or ""
        with _lock:
            known = _registry.get(name)
            if known is not None and _qualified(known.fn) != _qualified(fn):
                raise ValueError(f"an evaluator named {name!r} is already registered")
            _registry[name] = CustomEvaluator(name, said.strip(), fn, params)
        return fn

    return register


def _qualified(fn: EvaluatorFn) -> str:
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"


def unregister_evaluator(name: str) -> None:
    """Forget ``name`` (tests, plugins being reloaded); unknown names are ignored."""
    with _lock:
        _registry.pop(name, None)


def registered() -> list[RegisteredEvaluator]:
    """Every custom evaluator, by name."""
    with _lock:
        found = sorted(_registry.values(), key=lambda evaluator: evaluator.name)
    return [RegisteredEvaluator(e.name, e.description, _fields(e.params)) for e in found]


def _fields(model: type[BaseModel] | None) -> tuple[ParamField, ...] | None:
    """``model``'s fields as its JSON Schema states them (defaults as JSON, by alias)."""
    if model is None:
        return None
    schema = model.model_json_schema()
    required = set(schema.get("required", ()))
    return tuple(
        ParamField(
            name=name,
            required=name in required,
            description=str(field.get("description", "")),
            default=field.get("default"),
        )
        for name, field in schema.get("properties", {}).items()
    )


def params_problems(name: str, params: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """What is wrong with ``params`` for the custom evaluator ``name``: each problem's
    place in ``params`` and what is wrong there, in words; none for an unknown name or
    one without a params model (the run would say the first)."""
    with _lock:
        evaluator = _registry.get(name)
    if evaluator is None or evaluator.params is None:
        return []
    try:
        evaluator.params.model_validate(params)
    except ValidationError as exc:
        return _problems_of(exc)
    return []


def _problems_of(exc: ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    return [
        (
            tuple(error["loc"]),
            "not a parameter it takes" if error["type"] == "extra_forbidden" else str(error["msg"]),
        )
        for error in exc.errors()
    ]


def _params_said(name: str, problems: list[tuple[tuple[str | int, ...], str]]) -> str:
    return "; ".join(
        f"{name}'s parameter {'.'.join(map(str, where))!r}: {said}" if where else f"{name}: {said}"
        for where, said in problems
    )


async def run_custom(spec: CustomSpec, case: Case, outcome: Outcome) -> Verdict:
    """The verdict of the custom evaluator ``spec.name``, isolated: whatever it does
    wrong is an ``error`` verdict, never an exception."""
    with _lock:
        evaluator = _registry.get(spec.name)
    if evaluator is None:
        known = ", ".join(e.name for e in registered()) or "none"
        return errored(spec, f"no custom evaluator named {spec.name!r} (registered: {known})")
    params = dict(spec.params)
    if evaluator.params is not None:
        try:
            checked = evaluator.params.model_validate(params)
        except ValidationError as exc:
            return errored(spec, _params_said(spec.name, _problems_of(exc)))
        params = checked.model_dump(mode="json", by_alias=True)
    try:
        result = await _call(evaluator.fn, case, outcome, params)
    except Exception as exc:
        return errored(spec, f"the evaluator {spec.name!r} raised {type(exc).__name__}: {exc}")
    if not isinstance(result, Verdict):
        return errored(
            spec,
            f"the evaluator {spec.name!r} returned {type(result).__name__}, not a Verdict",
        )
    return result.model_copy(update={"evaluator": label_of(spec)})


async def _call(fn: EvaluatorFn, case: Case, outcome: Outcome, params: dict[str, Any]) -> object:
    """Call ``fn``: a coroutine function on the loop, a plain one in a worker thread
    (so a slow check does not hold up every other run on the loop)."""
    if inspect.iscoroutinefunction(fn):
        result: object = await fn(case, outcome, params)
        return result
    result = await asyncio.to_thread(fn, case, outcome, params)
    if inspect.isawaitable(result):
        return await result
    return result


# -- built-in custom evaluators --------------------------------------------------------


def _builtin_spec(name: str) -> CustomSpec:
    return CustomSpec(name=name)


class NoParams(BaseModel):
    """An evaluator that takes no parameter."""

    model_config = ConfigDict(extra="forbid")


@register_evaluator("no_error", description="The run ended without an error.", params=NoParams)
def no_error(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
    spec = _builtin_spec("no_error")
    if outcome.error:
        return decided(spec, outcome.model_copy(update={"error": None}), False, outcome.error)
    return decided(spec, outcome, True, "the run ended without an error")


class MaxWords(BaseModel):
    """The parameters of ``max_words``."""

    model_config = ConfigDict(extra="forbid")

    max: int = Field(
        strict=True, ge=0, description="The most words the final answer may have (0 or more)."
    )


@register_evaluator(
    "max_words",
    description="The final answer has at most a number of words (split on whitespace).",
    params=MaxWords,
)
def max_words(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
    spec = _builtin_spec("max_words")
    limit = MaxWords.model_validate(params).max
    words = len(outcome.final_output.split())
    if words > limit:
        return decided(spec, outcome, False, f"{words} words, more than {limit}")
    return decided(spec, outcome, True, f"{words} words (at most {limit})")
