"""Ingested spans reach a session's viewers as they are stored, as Studio's own runs'
events do (``studio.live``): in seq order, never twice, then the run's status."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio.asgi import application
from studio.models import IngestedTrace, Session
from studio.services import ingest
from tests.support.live import stored, watch
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of

pytestmark = pytest.mark.django_db(transaction=True)


async def send(owner: User, *specs: object) -> None:
    done = await sync_to_async(ingest.ingest)(owner.pk, request_of(*specs))
    await ingest.publish(done)


async def test_a_viewer_gets_each_request_s_events_live_then_the_run_s_end(ada: User) -> None:
    trace_id = new_trace_id()
    root, first, tool, second = agent_trace(trace_id)
    await send(ada, first)
    session = await Session.objects.aget(ingested__trace_id=trace_id)
    viewer = await watch(application, session, ada, after=0)
    backlog = len(viewer.events)
    assert viewer.run_status == "running" and backlog >= 3  # user message, placeholder, call

    # Studio cannot know what an agent running elsewhere waits on: it says so.
    assert viewer.status is not None and viewer.status["waiting_for"] == "elsewhere"
    await send(ada, tool)
    await viewer.until(lambda v: len(v.events_of_type("tool_response")) == 1)
    assert viewer.status["waiting_for"] == "elsewhere"  # not "the model", a guess
    await send(ada, second, root)
    await viewer.until(lambda v: v.run_status == "succeeded")
    assert viewer.seqs == list(range(1, len(viewer.seqs) + 1))  # in order, none twice
    assert viewer.events == await stored(session)
    assert viewer.events[-1]["type"] == "agent_end"
    trace = await IngestedTrace.objects.aget(trace_id=trace_id)
    assert trace.root_span_id == root.span_id
