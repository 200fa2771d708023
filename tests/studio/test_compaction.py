"""Long sessions are compacted by default: the model's context stays bounded however
many turns a session has, and each compaction is a stored event the timeline draws."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core import events as core_events
from agents_core.agents import LlmAgent
from agents_core.history import SUMMARY_PREFIX, build_history
from agents_core.llm import BaseLlm, LlmRequest, LlmResponse
from agents_core.runner import Runner
from studio import services
from studio.agents import specs
from studio.agents.llms import WrappedLlm
from studio.models import DEFAULT_APP_NAME, Event, Run, Session
from studio.runs.execute import execute_run
from studio.session_service import DjangoSessionService
from tests.studio.conftest import client_for, make_agent, make_session

pytestmark = pytest.mark.django_db(transaction=True)

TURNS = 500


@sync_to_async
def queued(session: Session, text: str) -> Run:
    return services.start_run(Session.objects.get(pk=session.pk), text)


class SeenRequests(WrappedLlm):
    """The agent's own model, passed through, noting what each request held: what the
    model is actually sent, not a history rebuilt afterwards."""

    def __init__(self, inner: BaseLlm) -> None:
        super().__init__(inner)
        self.sizes: list[int] = []
        self.summarised: list[bool] = []
        self.last_texts: list[str] = []

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        messages = list(request.messages)
        self.sizes.append(len(messages))
        self.summarised.append(messages[0].text.startswith(SUMMARY_PREFIX))
        self.last_texts.append(messages[-1].text)
        async for response in self._inner.astream(request):
            yield response


@sync_to_async
def runner_for(session: Session) -> tuple[Runner, SeenRequests]:
    """The runner a run of ``session`` gets (``studio.runs.execute``): its version built
    from the spec, compaction included, over the Django session service; its agent's
    model noting the requests it is sent."""
    built = specs.build(
        Session.objects.select_related("agent_version__agent").get(pk=session.pk).agent_version
    )  # type: ignore[arg-type]
    assert isinstance(built.agent, LlmAgent)
    seen = built.agent.model = SeenRequests(built.agent.model)
    runner = Runner(
        built.agent,
        session_service=DjangoSessionService(),
        app_name=DEFAULT_APP_NAME,
        run_config=built.run_config,
        compaction=built.compaction,
    )
    return runner, seen


async def test_a_500_turn_session_keeps_the_models_context_bounded(ada: User) -> None:
    agent = await sync_to_async(make_agent)(ada, "chatty", instruction="Reply: noted")
    session = await sync_to_async(make_session)(ada, agent)
    runner, seen = await runner_for(session)
    started = time.monotonic()
    # The first turns as runs, the rest straight through the runner (the run records
    # add nothing to what the model sees, and 500 of them would slow the suite).
    for turn in range(3):
        run = await execute_run(await queued(session, f"message number {turn}"))
        assert run.status == "succeeded", (turn, run.error_message)
    for turn in range(3, TURNS):
        stream = runner.astream(
            user_id="ada", session_id=session.key, message=f"message number {turn}"
        )
        async for event in stream:
            assert not event.is_terminal_error, event
    elapsed = time.monotonic() - started

    rows = Event.objects.filter(session=session).order_by("seq")
    events = [row.to_core() async for row in rows]
    compactions = [e for e in events if e.type is core_events.EventType.COMPACTION]
    assert len(events) > 4 * TURNS
    # Two conversation events a turn; past 60 visible, all but the newest 20 are summarised.
    assert len(compactions) >= TURNS * 2 // (60 - 20) - 2
    assert compactions[-1].text.startswith("Summary of ")
    context = build_history(events, agent_name="chatty", branch="chatty", tool_result_max_chars=100)
    assert len(context) <= 60 + 2  # the summary, at most `threshold` raw events, the asking
    assert any(f"message number {TURNS - 1}" in m.text for m in context)
    # What the model was actually sent, turn by turn: never more than the bound, the
    # summary first once the session was compacted, and the turn's question last.
    assert len(seen.sizes) == TURNS - 3
    assert max(seen.sizes) <= 60 + 2
    assert all(seen.summarised[100:]) and not seen.summarised[0]
    assert seen.last_texts == [f"message number {turn}" for turn in range(3, TURNS)]
    print(f"{TURNS} turns in {elapsed:.1f}s")  # for the test log; nothing asserts on it

    # The timeline page comes with its newest events, compactions among them.
    page = await sync_to_async(client_for(ada).get)(
        f"/api/sessions/{session.pk}/events/?after={events[-1].seq - 100}"
    )
    assert any(e["type"] == "compaction" for e in page.json()["results"])


async def test_compaction_off_in_the_spec_leaves_the_history_whole(ada: User) -> None:
    agent = await sync_to_async(make_agent)(
        ada, "whole", instruction="Reply: noted", compaction={"enabled": False}
    )
    session = await sync_to_async(make_session)(ada, agent)
    for turn in range(20):
        await execute_run(await queued(session, f"message {turn}"))
    assert not await Event.objects.filter(session=session, type="compaction").aexists()
