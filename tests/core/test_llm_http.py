"""``PerLoopTransport``: a connection pool per event loop, dropped once its loop closed;
the shared transports outlive the clients built on them."""

from __future__ import annotations

import asyncio
import gc
import weakref

import httpx2

from agents_core.llm.http import PerLoopTransport, default_transports
from tests.support.held_stream import stream_while_other_clients_close
from tests.support.openai_server import OpenAIServer


def test_each_event_loop_gets_a_pool_of_its_own_and_closed_loops_pools_are_dropped(
    openai_server: OpenAIServer,
) -> None:
    built: list[weakref.ref[httpx2.AsyncHTTPTransport]] = []

    def build() -> httpx2.AsyncHTTPTransport:
        transport = httpx2.AsyncHTTPTransport()
        built.append(weakref.ref(transport))
        return transport

    client = httpx2.AsyncClient(transport=PerLoopTransport(build))

    async def list_models_twice() -> list[int]:
        url = f"{openai_server.base_url}/models"
        return [(await client.get(url)).status_code for _ in range(2)]

    statuses = [asyncio.run(list_models_twice()) for _ in range(5)]

    assert statuses == [[200, 200]] * 5
    assert len(built) == 5  # one per loop
    ports = [request.client_port for request in openai_server.requests]
    assert all(ports[i] == ports[i + 1] for i in range(0, 10, 2))  # a loop's requests share one
    gc.collect()  # the pools of closed loops hold their connections in reference cycles
    assert [ref() is not None for ref in built] == [False] * 4 + [True]  # the last loop's is kept


def test_a_client_closed_on_the_shared_transports_leaves_other_clients_streams_alone() -> None:
    # A provider SDK closes its HTTP client when it is garbage collected (google-genai
    # schedules ``aclose()`` on the running loop); the model clients share the process's
    # transports, so a close must not end another run's stream on the same loop.
    assert stream_while_other_clients_close(default_transports()) == b"firstlast"
