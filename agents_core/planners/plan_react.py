"""``PlanReActPlanner``: plan, reason and act in tagged sections, then answer.

Modelled on ADK's planner of the same name: the model writes its plan and reasoning
in sections marked ``/*PLANNING*/``, ``/*REASONING*/`` and so on, and its answer after
``/*FINAL_ANSWER*/``. The planner keeps those sections out of the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents_core.context import ReadonlyContext
from agents_core.events import EventType, ThinkingPart
from agents_core.llm.contracts import LlmRequest, LlmResponse
from agents_core.planners.base import BasePlanner

PLANNING_TAG = "/*PLANNING*/"
REPLANNING_TAG = "/*REPLANNING*/"
REASONING_TAG = "/*REASONING*/"
ACTION_TAG = "/*ACTION*/"
FINAL_ANSWER_TAG = "/*FINAL_ANSWER*/"

_PLANNING = "PLANNING"
_REPLANNING = "REPLANNING"
_FINAL_ANSWER = "FINAL_ANSWER"
_NARRATION = frozenset({_PLANNING, _REPLANNING, "REASONING"})
"""Sections that are never part of the answer, with or without a final-answer tag."""

# Lenient about case and spacing inside the marker: "/* planning */" is still a tag.
_TAG = re.compile(r"/\*\s*(PLANNING|REPLANNING|REASONING|ACTION|FINAL_ANSWER)\s*\*/", re.I)

INSTRUCTION = f"""\
Work in sections, each starting with its tag:
{PLANNING_TAG} Before anything else, a short numbered plan for answering the request.
{REASONING_TAG} What the latest tool results tell you, and what to do next.
{ACTION_TAG} The tool you call next and why; make the call itself as a tool call.
{REPLANNING_TAG} A revised plan, only when a result shows the current plan will not work.
{FINAL_ANSWER_TAG} Once you can answer: the answer for the user, and nothing after it.
Use only these tags, and write nothing meant for the user outside {FINAL_ANSWER_TAG}."""


@dataclass(slots=True, frozen=True)
class Section:
    """One part of a response: its tag's name (``None`` for untagged text) and text."""

    tag: str | None
    text: str


def split_sections(text: str) -> list[Section]:
    """Split ``text`` at every tag; text before the first tag is an untagged section.
    Empty sections are dropped."""
    sections: list[Section] = []
    tag: str | None = None
    position = 0
    for match in _TAG.finditer(text):
        sections.append(Section(tag, text[position : match.start()].strip()))
        tag, position = match.group(1).upper(), match.end()
    sections.append(Section(tag, text[position:].strip()))
    return [s for s in sections if s.text]


def join_sections(sections: list[Section]) -> str:
    return "\n".join(f"/*{s.tag}*/\n{s.text}" if s.tag else s.text for s in sections)


class PlanReActPlanner(BasePlanner):
    """Asks for a plan, reasoning, actions and a final answer in tagged sections.

    ``process_response`` moves the plan and the reasoning into the response's
    ``thinking`` (tags kept, so they can be read back) and leaves the final answer as
    its ``text``. Without a final-answer tag, the text is what remains once the
    planning and reasoning sections are taken out. The latest plan of the current
    invocation is repeated in each later instruction, since models do not see their
    own thinking in history.
    """

    def build_planning_instruction(self, ctx: ReadonlyContext, request: LlmRequest) -> str | None:
        del request
        plan = latest_plan(ctx)
        if plan is None:
            return INSTRUCTION
        return f"{INSTRUCTION}\n\nYour current plan (replan only if it no longer works):\n{plan}"

    def process_response(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        del ctx
        if not _TAG.search(response.text):
            return response
        sections = split_sections(response.text)
        answers = [s for s in sections if s.tag == _FINAL_ANSWER]
        if answers:
            text = answers[-1].text
            thoughts = [s for s in sections if s is not answers[-1]]
        else:
            text = "\n\n".join(s.text for s in sections if s.tag not in _NARRATION)
            thoughts = [s for s in sections if s.tag in _NARRATION]
        thinking = "\n".join(t for t in (response.thinking, join_sections(thoughts)) if t)
        # A provider's signature signs its own thinking only: merged with the planner's
        # sections it would no longer match.
        signature = response.thinking_signature if thinking == response.thinking else ""
        return response.model_copy(
            update={"text": text, "thinking": thinking, "thinking_signature": signature}
        )


def latest_plan(ctx: ReadonlyContext) -> str | None:
    """The last plan (or replan) this agent wrote in the current invocation."""
    for event in reversed(ctx.events):
        if (
            event.type is not EventType.AGENT_MESSAGE
            or event.partial
            or event.author != ctx.agent_name
            or event.branch != ctx.branch
            or event.invocation_id != ctx.invocation_id
        ):
            continue
        for part in reversed(event.parts):
            if not isinstance(part, ThinkingPart):
                continue
            plans = [s for s in split_sections(part.text) if s.tag in (_PLANNING, _REPLANNING)]
            if plans:
                return plans[-1].text
    return None
