"""``TaskPlanner``: a todo list the agent keeps in session state and works through."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from agents_core.context import ReadonlyContext
from agents_core.contracts import Contract
from agents_core.exceptions import ToolArgumentsError
from agents_core.llm.contracts import LlmRequest
from agents_core.planners.base import BasePlanner
from agents_core.tools.base import BaseTool, ToolContext

DEFAULT_STATE_KEY = "_todos"

TodoStatus = Literal["pending", "in_progress", "done"]

_MARKS: Mapping[str, str] = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class Todo(Contract):
    """One item of the list."""

    content: str = Field(min_length=1)
    status: TodoStatus = "pending"


class WriteTodosArgs(Contract):
    todos: list[Todo]


_TODO_LIST = TypeAdapter(list[Todo])


def read_todos(state: Mapping[str, Any], key: str = DEFAULT_STATE_KEY) -> list[Todo]:
    """The todo list stored under ``key``; empty when missing or not a valid list
    (state is shared, so another writer may have put anything there)."""
    try:
        return _TODO_LIST.validate_python(state.get(key) or [])
    except ValidationError:
        return []


class WriteTodosTool(BaseTool):
    """Replaces the whole todo list, so the model always states it in full."""

    name = "write_todos"
    description = (
        "Write your todo list for this task: every item with its status "
        "(pending, in_progress or done). The list you send replaces the previous one, so "
        "send all items each time. Mark an item done as soon as it is finished."
    )
    timeout_s = None

    def __init__(self, state_key: str = DEFAULT_STATE_KEY) -> None:
        self.state_key = state_key

    def parameters_schema(self) -> dict[str, Any]:
        schema = WriteTodosArgs.model_json_schema()
        schema.pop("title", None)
        return schema

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        try:
            todos = WriteTodosArgs.model_validate(args).todos
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolArgumentsError(f"invalid todo list: {problems}") from exc
        tool_context.effects.state_delta[self.state_key] = [t.model_dump() for t in todos]
        left = sum(t.status != "done" for t in todos)
        return f"Todo list saved: {len(todos)} items, {left} not done."


class TaskPlanner(BasePlanner):
    """Gives the agent a ``write_todos`` tool and shows it the current list every turn.

    The list lives in session state under ``state_key`` (written through the tool's
    state delta, so it is stored with the tool's response). While items are not done,
    ``pending_tasks`` names them and an answer without tool calls does not end the
    agent's turn; the agent's ``max_iterations`` still bounds how long it keeps going.
    """

    def __init__(self, *, state_key: str = DEFAULT_STATE_KEY) -> None:
        self.state_key = state_key

    def tools(self) -> Sequence[BaseTool]:
        return (WriteTodosTool(self.state_key),)

    def build_planning_instruction(self, ctx: ReadonlyContext, request: LlmRequest) -> str | None:
        del request
        todos = read_todos(ctx.state, self.state_key)
        if not todos:
            return (
                "For a task with several steps, first write a todo list with write_todos, "
                "then work through it, marking items in_progress and done as you go."
            )
        lines = "\n".join(f"{_MARKS[t.status]} {t.content}" for t in todos)
        text = f"Your todo list ([ ] pending, [~] in progress, [x] done):\n{lines}"
        if any(t.status != "done" for t in todos):
            text += (
                "\nKeep working until every item is done, and update the list with "
                "write_todos as you finish each one."
            )
        return text

    def pending_tasks(self, ctx: ReadonlyContext) -> Sequence[str]:
        return [t.content for t in read_todos(ctx.state, self.state_key) if t.status != "done"]
