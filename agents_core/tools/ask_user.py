"""``AskUserTool``: the agent asks the user a question mid-run and waits for the answer.

The call announces itself with a ``user_question`` event and waits, like a call waiting
for approval and through the same broker (``agents_core.approvals``), for a
``UserAnswer`` bound to its call id and to the hash of its question. A ``user_answer``
event records the answer (or that nobody answered in time) and the model reads the
answer as the tool's result. The wait is a span of its own inside the call's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents_core.approvals import UserAnswer, args_hash
from agents_core.events import EventType, QuestionInfo, new_id
from agents_core.exceptions import ToolTimeoutError
from agents_core.tools.base import BaseTool, ToolContext, args_schema, parse_args

ASK_USER_TOOL_NAME = "ask_user"
DEFAULT_ANSWER_TIMEOUT_S = 900.0
MAX_QUESTION_CHARS = 2_000


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="One clear question for the user, with what you need to know and why.",
    )


class AskUserTool(BaseTool):
    """Asks the user one question and returns their answer.

    ``timeout_s`` bounds the wait for an answer (the tool's own time limit does not
    apply); when it passes, the model reads that nobody answered.
    """

    name = ASK_USER_TOOL_NAME
    side_effects = False  # asking changes nothing; the answer is in the record
    description = (
        "Ask the user a question when you cannot go on without their input (a choice, "
        "a missing detail, a confirmation). The run waits for their answer, which you "
        "receive as this tool's result."
    )
    timeout_s = None

    def __init__(self, *, timeout_s: float = DEFAULT_ANSWER_TIMEOUT_S) -> None:
        self.answer_timeout_s = timeout_s

    def parameters_schema(self) -> dict[str, Any]:
        return args_schema(_Question)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        question = parse_args(_Question, args).question
        call, ctx = tool_context.call, tool_context.context
        info = QuestionInfo(
            call_id=call.id,
            question=question,
            args_hash=args_hash(call.name, call.args),
            timeout_s=self.answer_timeout_s,
        )
        wait = new_id()
        brokers = ctx.invocation.approvals
        with brokers.expect(call, session_id=ctx.session_id, asks="answer") as pending:
            asked = ctx.event(
                EventType.USER_QUESTION,
                question=info,
                span_id=wait,
                parent_span_id=tool_context.span_id,
            )
            await tool_context.emit(asked)
            reply = await pending.wait(self.answer_timeout_s)
        answer = reply if isinstance(reply, UserAnswer) else None
        outcome = info.model_copy(
            update={
                "answer": answer.text if answer else None,
                "answered_by": answer.answered_by if answer else "timeout",
            }
        )
        answered = ctx.event(
            EventType.USER_ANSWER,
            question=outcome,
            started_at=asked.created_at,
            span_id=wait,
            parent_span_id=tool_context.span_id,
        )
        await tool_context.emit(answered)
        if answer is None:
            raise ToolTimeoutError(
                f"the user did not answer within {self.answer_timeout_s:g}s; go on without "
                "their answer or say what you need"
            )
        return answer.text
