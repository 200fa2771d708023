"""``BasePlanner``: per-turn hooks an ``LlmAgent`` calls around every model call."""

from __future__ import annotations

from collections.abc import Sequence

from agents_core.context import ReadonlyContext
from agents_core.llm.contracts import LlmRequest, LlmResponse
from agents_core.tools.base import BaseTool


class BasePlanner:
    """Planners shape each turn from the live context; every hook has a neutral default.

    - ``build_planning_instruction`` adds to the system instruction of the next request;
    - ``process_response`` may rewrite a complete response (split reasoning from the
      answer, record a plan) before it is stored;
    - ``pending_tasks`` names unfinished work: while it is non-empty, an answer without
      tool calls does not end the agent's turn;
    - ``tools`` are added to the agent's tools (a todo-list tool, say).
    """

    def build_planning_instruction(self, ctx: ReadonlyContext, request: LlmRequest) -> str | None:
        del ctx, request
        return None

    def process_response(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        del ctx
        return response

    def pending_tasks(self, ctx: ReadonlyContext) -> Sequence[str]:
        del ctx
        return ()

    def tools(self) -> Sequence[BaseTool]:
        return ()
