"""Remote A2A agents (``RemoteAgent``): registered on their page and the API, each
owner's own (404 for anyone else's), their card read from the SDK's own server on
loopback with the stored token, the token never shown, the outbound checks applied
(a refused address stores nothing), a malformed card said as an error, and markup in
card text shown as text. Removing one an agent lists is refused; the admin is
read-mostly and scoped to the owner for staff who are not superusers. And the
migration moves A2A rows registered as MCP servers."""

from __future__ import annotations

import http.server
import importlib
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from studio.models import AgentVersion, McpServer, RemoteAgent
from tests.studio.conftest import client_for, make_agent, signed_in
from tests.support import a2a_server

pytestmark = pytest.mark.django_db
LIST, NEW = "/remote-agents/", "/remote-agents/new/"
API = "/api/remote-agents/"


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with a2a_server.serve(streaming=True) as url:
        yield url


@pytest.fixture
def serve_body() -> Iterator[Any]:
    """Serve one fixed body at every path on loopback: a card that is not one."""
    servers: list[http.server.HTTPServer] = []

    def serve(body: bytes, status: int = 200) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/"

    yield serve
    for server in servers:
        server.shutdown()


def uses(owner: User, remote: str) -> None:
    make_agent(owner, tools=[{"name": "a2a", "settings": {"servers": [remote]}}])


def test_the_page_registers_one_and_reads_its_card_with_the_token(ada: User, echo_url: str) -> None:
    page = signed_in(ada)
    a2a_server.SEEN_AUTH.clear()
    answer = page.post(NEW, {"name": "echo", "url": echo_url, "token": a2a_server.TOKEN})
    assert answer.status_code == 302, answer.content.decode()
    remote = RemoteAgent.objects.get(owner=ada, name="echo")
    assert remote.card["name"] == "echo" and remote.card["streaming"] is True
    assert remote.card["skills"][0]["description"] == "Echoes."
    assert f"Bearer {a2a_server.TOKEN}" in a2a_server.SEEN_AUTH
    assert a2a_server.TOKEN not in remote.headers_ciphertext
    listed = page.get(LIST).content.decode()
    assert "Echoes what it is asked." in listed and "a2a_echo" in listed
    assert a2a_server.TOKEN not in listed
    assert a2a_server.TOKEN not in page.get(f"/remote-agents/{remote.pk}/").content.decode()
    assert "Read just now" in listed and "0 minutes" not in listed
    RemoteAgent.objects.filter(pk=remote.pk).update(
        card_fetched_at=timezone.now() - timedelta(minutes=5, seconds=3)
    )
    assert "Read 5\xa0minutes ago" in page.get(LIST).content.decode()  # as timesince writes it
    # Each agent that uses it is one name that does not break; names are separated.
    uses(ada, "echo")
    listed = page.get(LIST).content.decode()
    assert '<td data-label="Used by"><span class="nowrap">helper</span></td>' in listed
    # The way back to the MCP servers comes first, as every page's way back does.
    assert listed.index(">MCP servers</a> /") < listed.index("<h1>Remote agents</h1>")


def test_a_refused_address_stores_nothing(ada: User, settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    answer = signed_in(ada).post(NEW, {"name": "inside", "url": "http://127.0.0.1:9/"})
    assert answer.status_code == 400
    assert "STUDIO_OUTBOUND_ALLOWLIST" in answer.content.decode()
    refused = client_for(ada).post(
        API, {"name": "inside", "url": "http://169.254.169.254/"}, format="json"
    )
    assert refused.status_code == 400, refused.json()
    assert not RemoteAgent.objects.exists()
    bad = client_for(ada).post(API, {"name": "x", "url": "javascript:alert(1)"}, format="json")
    assert bad.status_code == 400
    for token in ("tok\r\nX-Evil: 1", "tökén", "two words"):
        body = {"name": "x", "url": "http://127.0.0.1:9/", "token": token}
        assert client_for(ada).post(API, body, format="json").status_code == 400
        assert signed_in(ada).post(NEW, body).status_code == 400


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<html>not json</html>", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"name": 7, "skills": "many"}', "not an A2A agent card"),
        (b"{" + b'"a": "' + b"x" * 300_000 + b'"}', "over 256 KiB"),
    ],
)
def test_a_malformed_card_is_an_error_that_says_why(
    ada: User, serve_body: Any, body: bytes, said: str
) -> None:
    url = serve_body(body)
    answer = client_for(ada).post(API, {"name": "odd", "url": url}, format="json")
    assert answer.status_code == 201, answer.json()
    assert said in answer.json()["card_error"] and answer.json()["card"] == {}
    listed = signed_in(ada).get(LIST).content.decode()
    assert said in listed
    assert "Tried just now" in listed and "Read just now" not in listed  # nothing was read


def test_markup_in_the_card_is_shown_as_text(ada: User, serve_body: Any) -> None:
    card = {
        "name": "<b>bold</b>",
        "description": "<script>alert(1)</script>",
        "version": "1",
        "supportedInterfaces": [{"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC"}],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "<img src=x onerror=alert(1)>", "description": "d"}],
    }
    url = serve_body(json.dumps(card).encode())
    answer = client_for(ada).post(API, {"name": "markup", "url": url}, format="json")
    assert answer.json()["card"]["name"] == "<b>bold</b>", answer.json()
    page = signed_in(ada).get(LIST).content.decode()
    assert "<script>alert(1)</script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;bold&lt;/b&gt;" in page


def test_each_owner_sees_and_changes_only_their_own(ada: User, bob: User, echo_url: str) -> None:
    made = client_for(ada).post(
        API, {"name": "echo", "url": echo_url, "token": a2a_server.TOKEN}, format="json"
    )
    assert made.status_code == 201 and "token" not in made.json()
    assert made.json()["has_token"] is True and made.json()["card"]["name"] == "echo"
    pk = made.json()["id"]
    bobs = client_for(bob)
    assert bobs.get(API).json()["results"] == []
    for answer in (
        bobs.get(f"{API}{pk}/"),
        bobs.patch(f"{API}{pk}/", {"name": "mine"}, format="json"),
        bobs.post(f"{API}{pk}/refresh/"),
        bobs.delete(f"{API}{pk}/"),
    ):
        assert answer.status_code == 404
    for path in (f"/remote-agents/{pk}/", f"/remote-agents/{pk}/test/"):
        bob_page = signed_in(bob)
        got = bob_page.post(path) if path.endswith("test/") else bob_page.get(path)
        assert got.status_code == 404
    assert signed_in(bob).post(f"/remote-agents/{pk}/delete/").status_code == 404
    assert RemoteAgent.objects.filter(pk=pk).exists()
    assert client_for(None).get(API).status_code in (401, 403)
    assert signed_in(ada).get(LIST).status_code == 200
    assert Client().get(LIST).status_code == 302  # to the sign-in page


def test_refresh_reads_the_card_again_and_a_wrong_token_says_401(ada: User, echo_url: str) -> None:
    made = client_for(ada).post(API, {"name": "echo", "url": echo_url, "token": "wrong"}, "json")
    assert "401" in made.json()["card_error"], made.json()
    pk = made.json()["id"]
    fixed = client_for(ada).patch(f"{API}{pk}/", {"token": a2a_server.TOKEN}, format="json")
    assert fixed.json()["card_error"] == "" and fixed.json()["card"]["name"] == "echo"
    again = client_for(ada).post(f"{API}{pk}/refresh/")
    assert again.status_code == 200 and again.json()["card"]["name"] == "echo"


def test_one_an_agent_lists_is_not_removed_nor_renamed(ada: User) -> None:
    remote = RemoteAgent.objects.create(owner=ada, name="billing", url="http://127.0.0.1:9/")
    uses(ada, "billing")
    api = client_for(ada)
    assert api.delete(f"{API}{remote.pk}/").status_code == 409
    renamed = api.patch(f"{API}{remote.pk}/", {"name": "other"}, format="json")
    assert renamed.status_code == 400 and "helper" in json.dumps(renamed.json())
    page = signed_in(ada)
    page.post(f"/remote-agents/{remote.pk}/delete/")
    assert RemoteAgent.objects.filter(pk=remote.pk).exists()
    unused = RemoteAgent.objects.create(owner=ada, name="spare", url="http://127.0.0.1:9/")
    assert page.post(f"/remote-agents/{unused.pk}/delete/").status_code == 302
    assert not RemoteAgent.objects.filter(pk=unused.pk).exists()


def test_a_spec_lists_only_its_owners_remote_agents(ada: User, bob: User) -> None:
    RemoteAgent.objects.create(owner=bob, name="bobs", url="http://127.0.0.1:9/")
    tool = {"name": "a2a", "settings": {"servers": ["bobs"]}}
    answer = client_for(ada).post(
        "/api/agents/",
        {"name": "x", "spec": {"name": "x", "model": "m", "instruction": ".", "tools": [tool]}},
        format="json",
    )
    assert answer.status_code == 400 and "no remote agent named bobs" in json.dumps(answer.json())


def test_the_admin_is_read_mostly_and_scoped_for_staff_who_are_not_superusers(
    ada: User, bob: User, django_user_model: type[User]
) -> None:
    clerk = django_user_model.objects.create_user("clerk", password="x-password-1", is_staff=True)
    clerk.user_permissions.set(Permission.objects.filter(codename__endswith="remoteagent"))
    mine = RemoteAgent(owner=clerk, name="mine", url="http://127.0.0.1:9/")
    mine.set_token("admin-CANARY-token")
    mine.save()
    theirs = RemoteAgent.objects.create(owner=bob, name="theirs", url="http://127.0.0.1:9/")
    page = signed_in(clerk)
    listed = page.get("/admin/studio/remoteagent/").content.decode()
    assert "mine" in listed and "theirs" not in listed
    shown = page.get(f"/admin/studio/remoteagent/{mine.pk}/change/")
    assert shown.status_code == 200 and "admin-CANARY-token" not in shown.content.decode()
    assert "Authorization" in shown.content.decode()
    assert page.get(f"/admin/studio/remoteagent/{theirs.pk}/change/").status_code == 302
    assert page.get("/admin/studio/remoteagent/add/").status_code == 403


def test_the_migration_moves_a2a_rows_registered_as_mcp_servers(ada: User) -> None:
    from django.apps import apps

    moved = McpServer(owner=ada, name="billing", transport="http", url="http://127.0.0.1:9/")
    moved.set_headers({"Authorization": "Bearer moved-token"})
    moved.save()
    both = McpServer.objects.create(
        owner=ada, name="docs", transport="http", url="http://127.0.0.1:8/"
    )
    McpServer.objects.create(owner=ada, name="plain", transport="http", url="http://127.0.0.1:7/")
    agent = make_agent(ada, mcp=[{"server": "docs"}, {"server": "plain"}])
    # Stored before this migration, when the a2a tool named MCP servers (written as is).
    tool = {"name": "a2a", "settings": {"servers": ["billing", "docs"]}}
    spec = {**agent.current_version.spec, "tools": [tool]}
    AgentVersion.objects.filter(pk=agent.current_version.pk).update(spec=spec)
    migration = importlib.import_module("studio.migrations.0041_remote_agents")
    migration.move_a2a_servers(apps, None)
    remotes = {r.name: r for r in RemoteAgent.objects.filter(owner=ada)}
    assert set(remotes) == {"billing", "docs"}
    assert remotes["billing"].headers() == {"Authorization": "Bearer moved-token"}
    assert set(McpServer.objects.values_list("name", flat=True)) == {"docs", "plain"}
    assert McpServer.objects.filter(pk=both.pk).exists()
