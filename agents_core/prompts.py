"""Prompt templates: named, versioned instructions written in sandboxed Jinja.

An agent spec may take its instruction from a template (``instruction_template``: a
name and a version) instead of writing it inline. The template is rendered before each
model call with the session state as its variables (``{{ user_name }}``, or
``{{ state["user name"] }}`` for a key that is not a name)::

    You help {{ customer }}.{% if tier == "gold" %} Be brief.{% endif %}

Templates come from a ``TemplateStore`` (``InMemoryTemplateStore`` here; Studio keeps
them per user in its database). A version is never changed: a new text is a new version,
and a spec that names no version is pinned to the latest one by whoever stores it.

Rendering runs in Jinja's immutable sandbox: no attribute starting with ``_``, no
function calls on arbitrary objects, no mutation of state. It is also bounded, because a
template is user input run on the server: no ``range``, no recursive loops or macros,
loops nested at most ``MAX_LOOP_DEPTH`` deep (over state, which is bounded), ``*`` and
``**`` refused when their result would be large, and the output at most
``MAX_OUTPUT_CHARS``. Anything else is a ``PromptTemplateError`` that says what.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jinja2 import StrictUndefined, TemplateError, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agents_core.exceptions import ConfigurationError

__all__ = [
    "MAX_SOURCE_CHARS",
    "InMemoryTemplateStore",
    "InstructionTemplate",
    "PromptTemplate",
    "PromptTemplateError",
    "TemplateStore",
    "check_source",
    "render",
]

MAX_SOURCE_CHARS = 50_000
MAX_OUTPUT_CHARS = 100_000
MAX_LOOP_DEPTH = 2
MAX_REPEAT = 10_000
"""The largest string or list ``*`` may build, and the largest power ``**`` may."""


class PromptTemplateError(ConfigurationError):
    """A template that does not compile, reaches past its sandbox, or fails to render
    (an unknown variable, a limit); the message says which and where."""

    code = "prompt_template_error"


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """One version of a named template."""

    name: str
    version: int
    source: str


class TemplateStore(Protocol):
    """Where templates are found: ``get`` answers ``None`` for an unknown name or
    version; ``version=None`` asks for the latest."""

    def get(self, name: str, version: int | None = None) -> PromptTemplate | None: ...


class InMemoryTemplateStore:
    """Templates in a dict: for tests, and for callers that loaded theirs already."""

    def __init__(self, templates: Mapping[str, list[str]] | None = None) -> None:
        self._versions: dict[str, list[str]] = {}
        for name, sources in (templates or {}).items():
            for source in sources:
                self.add(name, source)

    def add(self, name: str, source: str) -> PromptTemplate:
        """Store ``source`` as the next version of ``name`` (checked first)."""
        check_source(source)
        versions = self._versions.setdefault(name, [])
        versions.append(source)
        return PromptTemplate(name, len(versions), source)

    def get(self, name: str, version: int | None = None) -> PromptTemplate | None:
        versions = self._versions.get(name, [])
        number = len(versions) if version is None else version
        if not 1 <= number <= len(versions):
            return None
        return PromptTemplate(name, number, versions[number - 1])


class InstructionTemplate:
    """An agent's instruction provider: ``template`` rendered with the session state
    before each model call (compiled once)."""

    def __init__(self, template: PromptTemplate) -> None:
        self.template = template
        self._compiled = _compile(template.source)

    def __call__(self, ctx: _HasState) -> str:
        return _render(self._compiled, ctx.state, where=self.template)

    def __repr__(self) -> str:
        return f"InstructionTemplate({self.template.name!r} v{self.template.version})"


class _HasState(Protocol):
    @property
    def state(self) -> Mapping[str, Any]: ...


def check_source(source: str) -> None:
    """Refuse a template that does not compile or uses what the sandbox forbids."""
    _compile(source)


def render(source: str, state: Mapping[str, Any]) -> str:
    """``source`` rendered with ``state``'s keys as variables (and ``state`` itself)."""
    return _render(_compile(source), state, where=None)


def _render(compiled: Any, state: Mapping[str, Any], *, where: PromptTemplate | None) -> str:
    variables = {key: value for key, value in state.items() if key.isidentifier()}
    which = f"template {where.name!r} v{where.version}" if where else "the template"
    try:
        return _bounded(compiled.generate(**variables, state=dict(state)))
    except SecurityError as exc:
        raise PromptTemplateError(f"{which} reached outside its sandbox: {exc}") from None
    except PromptTemplateError as exc:
        raise PromptTemplateError(f"{which}: {exc.message}") from None
    except (TemplateError, TypeError, ValueError, ArithmeticError, LookupError) as exc:
        raise PromptTemplateError(f"{which} failed to render: {exc}") from None


def _bounded(chunks: Iterator[str]) -> str:
    out: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_OUTPUT_CHARS:
            raise PromptTemplateError(
                f"the rendered template is longer than {MAX_OUTPUT_CHARS} characters"
            )
        out.append(chunk)
    return "".join(out)


_STR_METHODS = frozenset(
    {
        "lower",
        "upper",
        "title",
        "capitalize",
        "strip",
        "lstrip",
        "rstrip",
        "startswith",
        "endswith",
        "split",
        "splitlines",
        "isdigit",
        "isalpha",
        "count",
        "find",
    }
)
"""String methods a template may call: none that grows a string by an argument
(``ljust``, ``center``, ``zfill``, ``replace``, ``format`` ...)."""

_FILTERS = frozenset(
    {
        "abs",
        "capitalize",
        "count",
        "d",
        "default",
        "dictsort",
        "first",
        "float",
        "int",
        "items",
        "join",
        "last",
        "length",
        "list",
        "lower",
        "map",
        "max",
        "min",
        "reject",
        "rejectattr",
        "round",
        "select",
        "selectattr",
        "sort",
        "string",
        "sum",
        "title",
        "tojson",
        "trim",
        "truncate",
        "unique",
        "upper",
        "wordcount",
    }
)
"""Filters a template may use: none that pads, wraps or repeats by an argument."""


class _Sandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with ``*`` and ``**`` bounded and strings only shrunk,
    split or tested."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def wrap_str_format(self, value: Any) -> Any:
        if getattr(value, "__name__", None) in ("format", "format_map"):
            raise SecurityError("str.format is not allowed: put each value in {{ }}")
        return None

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, str) and callable(value):
            return attr in _STR_METHODS
        return bool(super().is_safe_attribute(obj, attr, value))

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        if operator_name == "**":
            return _power(left, right)
        if operator_name == "%":
            if isinstance(left, str):
                raise SecurityError("'%' formatting is not allowed: put each value in {{ }}")
            return operator.mod(left, right)
        return _repeat(left, right)


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(exponent, int | float) and abs(exponent) > 64:
        raise SecurityError("'**' with an exponent over 64 is not allowed")
    if isinstance(base, int | float) and abs(base) > 1_000_000:
        raise SecurityError("'**' with a base over 1,000,000 is not allowed")
    return operator.pow(base, exponent)


def _repeat(left: Any, right: Any) -> Any:
    sized = (str, list, tuple)
    if isinstance(left, sized) or isinstance(right, sized):
        count = right if isinstance(left, sized) else left
        seq = left if isinstance(left, sized) else right
        if isinstance(count, int) and len(seq) * count > MAX_REPEAT:
            raise SecurityError(f"'*' may build at most {MAX_REPEAT} items")
    return operator.mul(left, right)


_ENV = _Sandbox(
    undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, optimized=False
)
"""Not optimised: the optimiser folds constant expressions (``9 ** 9 ** 9``) while
compiling, where the bounds on ``*`` and ``**`` never see them."""
for _unbounded in ("range", "lipsum", "cycler", "joiner", "namespace", "dict"):
    _ENV.globals.pop(_unbounded, None)
_ENV.filters = {name: f for name, f in _ENV.filters.items() if name in _FILTERS}


def _compile(source: str) -> Any:
    if len(source) > MAX_SOURCE_CHARS:
        raise PromptTemplateError(f"a template may be at most {MAX_SOURCE_CHARS} characters")
    try:
        tree = _ENV.parse(source)
        _refuse_unbounded(tree)
        return _ENV.from_string(tree)
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        raise PromptTemplateError(f"the template does not compile{where}: {exc}") from None


def _refuse_unbounded(tree: nodes.Template) -> None:
    for node in tree.find_all((nodes.Macro, nodes.CallBlock, nodes.Extends, nodes.Include)):
        kind = type(node).__name__.lower()
        raise PromptTemplateError(f"a prompt template may not use {kind} (line {node.lineno})")
    for loop in tree.find_all(nodes.For):
        if loop.recursive:
            raise PromptTemplateError(f"recursive loops are not allowed (line {loop.lineno})")
    if _loop_depth(tree) > MAX_LOOP_DEPTH:
        raise PromptTemplateError(f"loops may nest at most {MAX_LOOP_DEPTH} deep")


def _loop_depth(node: nodes.Node) -> int:
    inner = max((_loop_depth(child) for child in node.iter_child_nodes()), default=0)
    return inner + 1 if isinstance(node, nodes.For) else inner
