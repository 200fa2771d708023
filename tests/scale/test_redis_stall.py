"""A Redis outage mid-run, for real: two Daphne servers on one throwaway PostgreSQL
database reach Redis through a TCP proxy that the test stalls (every byte held, as
``CLIENT PAUSE`` does) or cuts (every connection dropped and new ones refused) for
three seconds. Only these servers see the outage, not the other clients of the shared
Redis. The run goes on and stores every event; each viewer keeps its one socket open
and ends with every seq, in order, caught up from the database."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.utils.module_loading import import_string

from studio import live
from tests.scale.cluster import Api, Viewer, prepare, redis_url, throwaway_database, watch_all
from tests.scale.redis_proxy import RedisProxy, proxy_to, through
from tests.support.daphne_server import DaphneServer

pytestmark = pytest.mark.timeout(300)

OUTAGE_S = 3.0
VIEWERS_PER_SERVER = 5


def steady_agent(steps: int) -> dict[str, Any]:
    """An agent whose model streams ten words a step, 20 ms apart, and calls the
    calculator: about 0.2 s and two stored events a step."""
    words = " ".join(f"w{i}" for i in range(10))
    script: list[dict[str, Any]] = [
        {
            "text": f"step-{i} {words}",
            "tool_calls": [{"name": "calculator", "args": {"expression": f"{i} + 1"}}],
        }
        for i in range(steps)
    ]
    script.append({"text": "all done"})
    limits = {"max_steps": 1000, "max_model_calls": 1000, "max_tool_calls": 1000}
    return {
        "spec": {
            "name": "steady",
            "model": "steady_model",
            "instruction": "Play the script.",
            "tools": [{"name": "calculator"}],
            "max_iterations": 1000,
            "limits": limits,
        },
        "options": {"script": script, "loop": False, "token_delay_s": 0.02},
    }


@dataclass
class Stage:
    proxy: RedisProxy
    servers: list[DaphneServer]
    setup: dict[str, Any]
    viewers: list[Viewer] = field(default_factory=list)

    def api(self) -> Api:
        return Api(self.servers[0].url, self.setup["token"])

    async def watch(self, session_id: str) -> list[Viewer]:
        cookie = self.setup["cookie"]
        viewers = [
            Viewer(server, cookie, session_id)
            for server in self.servers
            for _ in range(VIEWERS_PER_SERVER)
        ]
        await asyncio.gather(*(viewer.open() for viewer in viewers))
        return viewers


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stage]:
    proxy = proxy_to(redis_url())
    with throwaway_database(migrated=True) as database_url:
        env = {
            "DATABASE_URL": database_url,
            "REDIS_URL": through(proxy, redis_url()),
            "STUDIO_SECRET_KEY": "scale-tests-only-secret-key",
            "STUDIO_FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
            "STUDIO_LIVE_RESYNC_S": "0.5",
        }
        data = tmp_path_factory.mktemp("stall") / "data"
        setup = prepare(DaphneServer(data, dict(env)), [steady_agent(40)])
        servers = [DaphneServer(data, dict(env)), DaphneServer(data, dict(env))]
        try:
            with ThreadPoolExecutor(2) as pool:  # each takes seconds to start
                for future in [pool.submit(server.start) for server in servers]:
                    future.result()
            yield Stage(proxy, servers, setup)
        finally:
            for server in servers:
                server.stop()
            proxy.close()


async def ride_out(stage: Stage, outage: Any) -> None:
    """Start a run watched from both servers, hold ``outage`` over Redis once every
    viewer has seen some of it, and check what every viewer ends with."""
    api = stage.api()
    session_id = api.new_session(stage.setup["agents"]["steady"])
    viewers = await stage.watch(session_id)
    run = api.send(session_id, "play")
    await watch_all(viewers, lambda v: v.last_seq >= 10, 60)

    watching = asyncio.ensure_future(watch_all(viewers, lambda v: v.ended, 120))
    before = len(api.events(session_id))
    await asyncio.to_thread(outage, OUTAGE_S)
    during = len(api.events(session_id))
    await watching

    assert api.run(run["id"])["status"] == "succeeded"
    stored = api.events(session_id)
    assert before < during < len(stored), "the run went on storing events through the outage"
    expected = [(event["seq"], event["id"]) for event in stored]
    for viewer in viewers:
        assert viewer.reconnects == 0, "the socket stayed open"
        assert viewer.breaches == []
        assert viewer.last_seq == len(stored), "the final status came after the last event"
        assert [(event["seq"], event["id"]) for event in viewer.events] == expected
        await viewer.close()


async def test_viewers_keep_their_sockets_through_a_stalled_redis_and_get_every_seq(
    stage: Stage,
) -> None:
    await ride_out(stage, stage.proxy.stall)


async def test_viewers_keep_their_sockets_while_redis_is_unreachable_and_get_every_seq(
    stage: Stage,
) -> None:
    await ride_out(stage, stage.proxy.cut)


@pytest.mark.parametrize("outage", ["stall", "cut"])
async def test_the_live_layer_delivers_again_once_redis_is_back(outage: str) -> None:
    """Sessions' live messages go through Redis publish/subscribe (the ``live`` layer):
    after an outage its subscription is back, so viewers are live again rather than
    left to the resync."""
    proxy = proxy_to(redis_url())
    config = settings.CHANNEL_LAYERS[live.LAYER]
    layer = import_string(config["BACKEND"])(
        **{**config["CONFIG"], "hosts": [through(proxy, redis_url())], "prefix": "stall-live"}
    )
    try:
        channel = await layer.new_channel()
        await layer.group_add("session.outage", channel)
        await layer.group_send("session.outage", {"type": "live.batch", "n": 0})
        assert (await asyncio.wait_for(layer.receive(channel), 5))["n"] == 0
        await asyncio.to_thread(getattr(proxy, outage), OUTAGE_S)
        for n in range(1, 100):  # what is published while it reconnects may be lost
            with contextlib.suppress(Exception):
                await layer.group_send("session.outage", {"type": "live.batch", "n": n})
            with contextlib.suppress(TimeoutError):
                if (await asyncio.wait_for(layer.receive(channel), 0.2))["n"] >= 1:
                    break
        else:
            pytest.fail("no live message came through once Redis was back")
    finally:
        await layer.flush()
        proxy.close()
