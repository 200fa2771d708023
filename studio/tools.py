"""The tools Studio offers agent specs: the core's defaults plus Studio's own."""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable

from agents_core.exceptions import ToolArgumentsError
from agents_core.tools import function_tool
from agents_core.tools.registry import ToolRegistry, default_registry

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


@function_tool(timeout_s=5.0)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written.

    Args:
        expression: Numbers, + - * / // % ** (or ^) and parentheses, e.g. "(2 + 3) * 7".
    """
    result = evaluate(expression)
    if isinstance(result, float) and result.is_integer():
        return str(int(result))
    return str(result)


@functools.cache
def tool_registry() -> ToolRegistry:
    """Every tool a spec may name. Built once; treat it as read-only."""
    registry = default_registry().copy()
    registry.register_tool(calculator)
    return registry
