"""``function_tool``: any typed Python function as a tool."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from agents_core.contracts import ToolSchema
from agents_core.exceptions import ConfigurationError
from agents_core.tools.base import BaseTool, ToolContext, args_schema, parse_args


class FunctionTool(BaseTool):
    """Wraps a sync or async function. Its arguments are validated by a pydantic model
    built from the type hints; the docstring gives the tool and parameter descriptions.
    A parameter annotated ``ToolContext`` receives the call's context and is hidden
    from the model. Sync functions run in a worker thread."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = 60.0,
        side_effects: bool = True,
    ) -> None:
        self.func = func
        self.name = name or func.__name__
        self.timeout_s = timeout_s
        self.side_effects = side_effects
        doc = docstring_parser.parse(inspect.getdoc(func) or "")
        self.description = description or _describe(doc)
        self._context_param, self._args_model = _args_model(func, self.name, doc)
        self._schema = args_schema(self._args_model)
        self._is_async = inspect.iscoroutinefunction(func)
        self._tool_schema: ToolSchema | None = None

    def parameters_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    def schema(self) -> ToolSchema:
        """Made once (again only if the name or description is changed): the same
        object on every model call lets the LangChain adapter reuse its tool binding."""
        made = self._tool_schema
        if made is None or (made.name, made.description) != (self.name, self.description):
            made = self._tool_schema = super().schema()
        return made

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        parsed = parse_args(self._args_model, args)
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self._context_param:
            kwargs[self._context_param] = tool_context
        if self._is_async:
            return await self.func(**kwargs)
        return await asyncio.to_thread(self.func, **kwargs)


@overload
def function_tool(func: Callable[..., Any], /) -> FunctionTool: ...
@overload
def function_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = 60.0,
    side_effects: bool = True,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def function_tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = 60.0,
    side_effects: bool = True,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a tool; usable bare (``@function_tool``) or with options."""

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f, name=name, description=description, timeout_s=timeout_s, side_effects=side_effects
        )

    return wrap(func) if func is not None else wrap


def _describe(doc: docstring_parser.Docstring) -> str:
    return "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)


def _args_model(
    func: Callable[..., Any], tool_name: str, doc: docstring_parser.Docstring
) -> tuple[str | None, type[BaseModel]]:
    hints = get_type_hints(func)
    param_docs = {p.arg_name: p.description for p in doc.params}
    fields: dict[str, Any] = {}
    context_param = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(f"tool {tool_name!r}: *args and **kwargs are not supported")
        annotation = hints.get(param.name)
        if annotation is None:
            raise ConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r} needs a type hint"
            )
        if annotation is ToolContext:
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name)))
    model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return context_param, model
