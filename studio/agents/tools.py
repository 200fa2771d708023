"""The tools Studio offers agent specs.

Specs come from browsers, so every setting a spec can choose is harmless: the files tools
are always jailed to the owner's workspace, and the shell exists only when the operator
lists programs in ``STUDIO_SHELL_ALLOWLIST`` (a spec picks at most a timeout). The SDK's
``default_registry`` is not used: its settings (any root, environment passthrough) are
for trusted code.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from agents_core.exceptions import ConfigurationError, ToolArgumentsError
from agents_core.tools import (
    AskUserTool,
    BaseTool,
    FilesystemSettings,
    ShellSettings,
    ToolRegistry,
    artifact_tools,
    exit_loop_tool,
    filesystem_tools,
    function_tool,
    shell_tool,
)
from studio.a2a import client as a2a_client

MAX_EXPRESSION_CHARS = 200
MAX_EXPONENT = 64
MAX_MAGNITUDE = 10**300

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def evaluate(expression: str) -> float:
    """Arithmetic only: numbers, + - * / // % ** and parentheses. Never ``eval``."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolArgumentsError(f"expressions may be at most {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError:
        raise ToolArgumentsError(f"not an arithmetic expression: {expression!r}") from None
    try:
        return _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolArgumentsError("division by zero") from None
    except OverflowError:
        raise ToolArgumentsError("the result is too large") from None


def _evaluate(node: ast.expr) -> float:
    match node:
        case ast.Constant(value=int() | float() as value) if not isinstance(value, bool):
            return value
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            return _UNARY[type(op)](_evaluate(operand))
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            lhs, rhs = _evaluate(left), _evaluate(right)
            if isinstance(op, ast.Pow) and abs(rhs) > MAX_EXPONENT:
                raise ToolArgumentsError(f"exponents may be at most {MAX_EXPONENT}")
            result = _BINARY[type(op)](lhs, rhs)
            if abs(result) > MAX_MAGNITUDE:
                raise OverflowError
            return result
    raise ToolArgumentsError("only numbers, + - * / // % ** and parentheses are allowed")


@function_tool(timeout_s=5.0, side_effects=False)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written.

    Args:
        expression: Numbers, + - * / // % ** (or ^) and parentheses, e.g. "(2 + 3) * 7".
    """
    result = evaluate(expression)
    if isinstance(result, float) and result.is_integer():
        return str(int(result))
    return str(result)


class AskUserSettings(BaseModel):
    """How long a question waits for the user's answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(
        default=900.0,
        gt=0,
        le=86_400,
        title="Answer time-out (s)",
        description="How long a question waits for an answer; then the model reads that "
        "nobody answered.",
    )


class WorkspaceToolSettings(BaseModel):
    """What a spec may choose about the filesystem tools: never the root."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_only: bool = Field(
        default=False, title="Read only", description="Leave out write, edit and mkdir."
    )


class ShellToolSettings(BaseModel):
    """What a spec may choose about the shell tool: the allowlist is the operator's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(
        default=30.0, gt=0, le=120, title="Time-out (s)", description="Longest a command runs."
    )


def workspace_dir(owner_id: object) -> Path:
    """The owner's private directory, the only one their agents' files tools can touch."""
    path = Path(settings.STUDIO_WORKSPACES_DIR) / str(owner_id)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def tool_registry(owner_id: object | None = None) -> ToolRegistry:
    """Every tool a spec may name, bound to ``owner_id``'s workspace.

    Without an owner the registry still lists and validates tools (for the API and
    spec checks) but cannot build the workspace tools.
    """
    registry = ToolRegistry()
    registry.register_tool(exit_loop_tool)
    registry.register_tool(calculator)
    registry.register(
        "artifacts",
        lambda _settings: artifact_tools(),
        description="Save, load and list files of the session (versioned artifacts).",
    )
    registry.register(
        "ask_user",
        lambda chosen: [AskUserTool(timeout_s=chosen.timeout_s)],
        description="Ask the user a question mid-run; the run waits for their answer.",
        settings_model=AskUserSettings,
    )

    def workspace(owner_settings: WorkspaceToolSettings) -> list[BaseTool]:
        root = workspace_dir(_require(owner_id))
        return filesystem_tools(FilesystemSettings(root=root, read_only=owner_settings.read_only))

    registry.register(
        "filesystem",
        workspace,
        description="List, read, write, edit, glob, grep and mkdir in your private workspace.",
        settings_model=WorkspaceToolSettings,
    )
    allowlist = tuple(settings.STUDIO_SHELL_ALLOWLIST)
    if allowlist:

        def shell(owner_settings: ShellToolSettings) -> list[BaseTool]:
            config = ShellSettings(
                enabled=True,
                allowlist=allowlist,
                timeout_s=owner_settings.timeout_s,
                cwd=workspace_dir(_require(owner_id)),
            )
            return [shell_tool(config)]

        registry.register(
            "shell",
            shell,
            description=f"Run one of {', '.join(allowlist)} in your workspace, without a shell.",
            settings_model=ShellToolSettings,
        )
    _register_a2a(registry, owner_id)
    return registry


def _register_a2a(registry: ToolRegistry, owner_id: object | None) -> None:
    def remote_agents(chosen: a2a_client.A2aToolSettings) -> list[BaseTool]:
        return a2a_client.a2a_tools(_require(owner_id), chosen)

    registry.register(
        "a2a",
        remote_agents,
        description=a2a_client.DESCRIPTION,
        settings_model=a2a_client.settings_model(owner_id),
    )


def _require(owner_id: object | None) -> object:
    if owner_id is None:
        raise ConfigurationError("workspace tools are built for an owner")
    return owner_id
