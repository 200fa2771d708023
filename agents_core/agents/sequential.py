"""``SequentialAgent``: children one after another, each handed its predecessor's answer."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing

from agents_core.agents.base import BaseAgent
from agents_core.context import Context
from agents_core.events import Event
from agents_core.exceptions import ConfigurationError
from agents_core.failures import FailurePolicy
from agents_core.pausing import pause_point


class SequentialAgent(BaseAgent):
    """Runs ``sub_agents`` in order on the same branch, so each sees what came before.

    Each child's final text becomes the next child's ``user_input``. Setting
    ``ctx.end_invocation`` (from an agent or tool) stops the pipeline.
    """

    def __init__(
        self,
        name: str,
        *,
        sub_agents: Sequence[BaseAgent],
        description: str = "",
        on_failure: FailurePolicy | str | None = None,
    ) -> None:
        if not sub_agents:
            raise ConfigurationError(f"sequential agent {name!r} needs at least one sub-agent")
        super().__init__(
            name, description=description, sub_agents=sub_agents, on_failure=on_failure
        )

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        step_input = ctx.user_input
        resume = ctx.invocation.resume
        for index, child in enumerate(self.sub_agents):
            if resume is not None and resume.skips(child.name, ctx.branch):
                # It finished before the turn was interrupted: its answer stands.
                step_input = resume.answer_of(child.name, ctx.branch) or step_input
                continue
            if index:  # a paused run waits between children
                async for held in pause_point(ctx):
                    yield held
            final: str | None = None
            async with aclosing(child.astream(ctx.with_input(step_input))) as events:
                async for event in events:
                    if event.is_final_response():
                        final = event.text
                    yield event
            if ctx.end_invocation:
                return
            if final is not None:
                step_input = final
