"""``GET /metrics``: who may read it, and that each figure moves with what happened
(runs executed for real, a live viewer connected, a channel layer that refuses)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token

from studio.asgi import application
from studio.consumers.watch import SessionWatch
from studio.live import publisher
from studio.models import Run, RunStatus
from studio.runs import records
from studio.runs.execute import execute_run
from tests.studio.conftest import Samples, make_agent, make_session, scrape
from tests.support.live import watch

pytestmark = pytest.mark.django_db(transaction=True)


def staff_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_only_staff_or_the_scrape_token_read_the_metrics(
    ada: User, staff: User, settings: Any
) -> None:
    settings.STUDIO_METRICS_TOKEN = "scrape-" + "x" * 32
    anonymous = Client().get("/metrics")
    assert anonymous.status_code == 401 and "Bearer" in anonymous["WWW-Authenticate"]
    signed_in = Client()
    signed_in.force_login(ada)
    assert signed_in.get("/metrics").status_code == 403
    ada_token = Token.objects.create(user=ada).key
    assert (
        Client().get("/metrics", headers={"Authorization": f"Token {ada_token}"}).status_code == 403
    )
    wrong = {"Authorization": "Bearer scrape-" + "y" * 32}
    assert Client().get("/metrics", headers=wrong).status_code == 403
    assert Client().post("/metrics").status_code in (401, 405)

    scrape(staff_client(staff))
    scrape(Client(), Authorization=f"Bearer {settings.STUDIO_METRICS_TOKEN}")
    staff_token = Token.objects.create(user=staff).key
    scrape(Client(), Authorization=f"Token {staff_token}")


def test_without_a_scrape_token_configured_no_bearer_is_accepted(
    staff: User, settings: Any
) -> None:
    settings.STUDIO_METRICS_TOKEN = ""
    assert Client().get("/metrics", headers={"Authorization": "Bearer "}).status_code == 401
    assert Client().get("/metrics", headers={"Authorization": "Bearer x"}).status_code == 403


async def test_the_figures_follow_runs_events_and_calls(ada: User, staff: User) -> None:
    client = await sync_to_async(staff_client)(staff)
    before = await sync_to_async(scrape)(client)
    agent = await sync_to_async(make_agent)(ada, "measured")
    session = await sync_to_async(make_session)(ada, agent)
    for question in ("one", "two"):
        run = await sync_to_async(records.queue_run)(session, question)
        ended = await execute_run(run)
        assert ended.status == RunStatus.SUCCEEDED
    queued = await sync_to_async(records.queue_run)(session, "three")  # never executed
    after = await sync_to_async(scrape)(client)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    stored = await sync_to_async(lambda: session.events.count())()
    assert grew("studio_runs_started_total") == 2
    assert grew("studio_runs_ended_total", status="succeeded") == 2
    assert grew("studio_run_duration_seconds_count") == 2
    assert grew("studio_run_duration_seconds_bucket", le="+Inf") == 2
    assert value(after, "studio_run_queue_depth") == 1
    assert grew("studio_events_stored_total") == stored
    assert grew("studio_events_persisted_total") == stored
    assert grew("studio_call_duration_seconds_count", kind="model") == 2
    await Run.objects.filter(pk=queued.pk).aupdate(status=RunStatus.PAUSED)
    paused = await sync_to_async(scrape)(client)
    assert value(paused, "studio_parked_runs", why="paused") == 1
    assert value(paused, "studio_run_queue_depth") == 0


async def test_a_viewer_whose_socket_is_killed_is_let_go(ada: User, staff: User) -> None:
    """Daphne cancels a socket's consumer that did not stop in time after its client
    left (``application_close_timeout``; an overloaded server): its ``disconnect`` never
    runs, and the viewer must still leave its session's watch and the gauge."""
    client = await sync_to_async(staff_client)(staff)
    session = await sync_to_async(make_session)(ada, await sync_to_async(make_agent)(ada))
    before = value(await sync_to_async(scrape)(client), "studio_live_viewers")
    viewer = await watch(application, session, ada)
    assert value(await sync_to_async(scrape)(client), "studio_live_viewers") == before + 1
    killed = viewer.communicator.future
    killed.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await killed
    assert value(await sync_to_async(scrape)(client), "studio_live_viewers") == before
    assert session.pk not in SessionWatch._watches  # its only viewer: the watch is gone


async def test_live_viewers_count_the_sockets_of_this_server(ada: User, staff: User) -> None:
    client = await sync_to_async(staff_client)(staff)
    session = await sync_to_async(make_session)(ada, await sync_to_async(make_agent)(ada))
    before = value(await sync_to_async(scrape)(client), "studio_live_viewers")
    viewer = await watch(application, session, ada)
    assert value(await sync_to_async(scrape)(client), "studio_live_viewers") == before + 1
    await viewer.close()
    assert value(await sync_to_async(scrape)(client), "studio_live_viewers") == before


async def test_messages_the_channel_layer_refuses_are_counted(
    staff: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await sync_to_async(staff_client)(staff)
    before = value(await sync_to_async(scrape)(client), "studio_channel_layer_drops_total")
    # A Redis channel layer whose server is not there: the publish fails, is counted,
    # and does not raise (viewers resync from the database).
    unreachable = RedisPubSubChannelLayer(hosts=[("127.0.0.1", 1)])
    monkeypatch.setattr(publisher, "get_channel_layer", lambda alias: unreachable)
    await publisher.publish(uuid.uuid4())
    after = value(await sync_to_async(scrape)(client), "studio_channel_layer_drops_total")
    assert after == before + 1


def test_sign_ins_refused_for_the_rate_limit_are_counted(
    ada: User, staff: User, settings: Any
) -> None:
    settings.STUDIO_AUTH_RATE = (2, 3600)
    client = staff_client(staff)
    before = value(scrape(client), "studio_sign_ins_refused_total")
    guesses = [
        Client().post("/accounts/login/", {"username": "ada", "password": "guess"})
        for _ in range(3)
    ]
    token = Client().post("/api/auth/token/", {"username": "ada", "password": "guess"})
    assert [g.status_code for g in guesses] + [token.status_code] == [200, 200, 429, 429]
    assert value(scrape(client), "studio_sign_ins_refused_total") == before + 2
