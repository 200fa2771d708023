"""Outbound requests (SSRF): model base URLs are refused when they reach anything but a
public address, in every spelling, unless the deployment's allowlist admits them."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from agents_core.llm.contracts import ChatMessage, LlmRequest
from studio import security
from studio.agents.llms import OutboundRefusedError, build_llm
from studio.models import ModelConfig
from tests.support.openai_server import OpenAIServer

PUBLIC = "93.184.215.14"


def fake_resolver(table: dict[str, list[str]]) -> security.Resolver:
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError("no such host")
        return table[host]

    return resolve


NAMES = fake_resolver(
    {
        "api.example.com": [PUBLIC],
        "metadata.evil.test": ["169.254.169.254"],
        "loop.evil.test": ["127.0.0.1"],
        "mixed.evil.test": [PUBLIC, "10.0.0.5"],
        "v6loop.evil.test": ["::1"],
        "mapped.evil.test": ["::ffff:192.168.1.1"],
        "ollama.internal": ["10.0.0.7"],
    }
)
EMPTY = security.Allowlist.parse([])

REFUSED = [
    # loopback, every spelling a resolver accepts
    "http://127.0.0.1/v1",
    "http://127.1/v1",
    "http://127.0.1/v1",
    "http://2130706433/v1",
    "http://0x7f000001/v1",
    "http://0x7f.0.0.1/v1",
    "http://0177.0.0.1/v1",
    "http://017700000001/v1",
    "http://127.0.0.1./v1",
    "http://127.255.255.254:8080/v1",
    "http://[::1]/v1",
    "http://[0:0:0:0:0:0:0:1]/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://[::ffff:7f00:1]/v1",
    "http://[::127.0.0.1]/v1",
    # unspecified
    "http://0.0.0.0/v1",
    "http://0/v1",
    "http://[::]/v1",
    # private
    "http://10.0.0.1/v1",
    "http://10.255.255.255/v1",
    "http://172.16.0.1/v1",
    "http://172.31.255.1/v1",
    "http://192.168.0.1/v1",
    "http://0xc0a80001/v1",
    "http://3232235521/v1",
    "http://[fc00::1]/v1",
    "http://[fd12:3456::1]/v1",
    "http://[::ffff:10.0.0.1]/v1",
    # link-local and cloud metadata
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.0.1/v1",
    "http://2852039166/latest/meta-data/",
    "http://0xa9fea9fe/latest/meta-data/",
    "http://0251.0376.0251.0376/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://[fe80::1]/v1",
    "http://[::ffff:169.254.169.254]/v1",
    # shared address space (CGNAT), documentation, benchmarking, reserved
    "http://100.64.0.1/v1",
    "http://100.127.255.254/v1",
    "http://192.0.2.1/v1",
    "http://198.18.0.1/v1",
    "http://240.0.0.1/v1",
    "http://255.255.255.255/v1",
    # multicast
    "http://224.0.0.1/v1",
    "http://239.255.255.250/v1",
    "http://[ff02::1]/v1",
    # IPv4 hidden in IPv6 transition prefixes
    "http://[64:ff9b::7f00:1]/v1",
    "http://[64:ff9b::a9fe:a9fe]/v1",
    "http://[2002:7f00:1::]/v1",
    "http://[2002:a9fe:a9fe::]/v1",
    # names that resolve to refused addresses, and names that do not resolve
    "http://metadata.evil.test/v1",
    "http://loop.evil.test:11434/v1",
    "http://mixed.evil.test/v1",
    "http://v6loop.evil.test/v1",
    "http://mapped.evil.test/v1",
    "http://nowhere.invalid/v1",
    "HTTP://LOOP.EVIL.TEST./v1",
    # not http(s), or hiding where it goes
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_INFO",
    "ftp://api.example.com/",
    "http://api.example.com@127.0.0.1/v1",
    "http://user:secret@api.example.com/v1",
    "http:///v1",
    "http://[::1/v1",
    "not a url",
]

ALLOWED = [
    "https://api.example.com/v1",
    "http://api.example.com:8000/v1",
    f"http://{PUBLIC}/v1",
    "https://[2606:4700:4700::1111]/v1",
    "https://8.8.8.8/v1",
]


@pytest.mark.parametrize("url", REFUSED)
def test_refuses_urls_reaching_non_public_addresses(url: str) -> None:
    with pytest.raises(security.OutboundURLError):
        security.check_outbound_url(url, allowlist=EMPTY, resolver=NAMES)


@pytest.mark.parametrize("url", ALLOWED)
def test_admits_urls_reaching_only_public_addresses(url: str) -> None:
    security.check_outbound_url(url, allowlist=EMPTY, resolver=NAMES)


@pytest.mark.parametrize(
    ("entries", "url"),
    [
        (["127.0.0.0/8"], "http://127.0.0.1:11434/v1"),
        (["127.0.0.1"], "http://2130706433/v1"),
        (["127.0.0.1"], "http://[::ffff:127.0.0.1]/v1"),
        (["::1"], "http://[::1]:8000/v1"),
        (["10.0.0.0/24"], "http://ollama.internal/v1"),
        (["OLLAMA.internal"], "http://ollama.internal/v1"),
        (["localhost"], "http://localhost:8000/v1"),
    ],
)
def test_the_allowlist_admits_named_hosts_and_networks(entries: list[str], url: str) -> None:
    security.check_outbound_url(url, allowlist=security.Allowlist.parse(entries), resolver=NAMES)


@pytest.mark.parametrize(
    ("entries", "url"),
    [
        (["127.0.0.1"], "http://169.254.169.254/v1"),
        (["10.0.0.0/24"], "http://10.0.1.1/v1"),
        (["ollama.internal"], "http://loop.evil.test/v1"),
        (["api.example.com"], "http://api.example.com@127.0.0.1/v1"),
    ],
)
def test_the_allowlist_admits_nothing_else(entries: list[str], url: str) -> None:
    with pytest.raises(security.OutboundURLError):
        security.check_outbound_url(
            url, allowlist=security.Allowlist.parse(entries), resolver=NAMES
        )


@pytest.mark.parametrize(
    ("url", "shown", "kind"),
    [
        ("http://[::ffff:127.0.0.1]/v1", "::ffff:127.0.0.1", "a loopback address"),
        ("http://loop.evil.test/v1", "loop.evil.test (127.0.0.1)", "a loopback address"),
        ("http://169.254.169.254/", "169.254.169.254", "a link-local address (where cloud"),
        ("http://10.1.2.3/", "10.1.2.3", "a private-network address"),
        ("http://100.64.0.1/", "100.64.0.1", "a shared (carrier-grade NAT) address"),
        ("http://0.0.0.0/", "0.0.0.0", "the unspecified address"),  # noqa: S104
        ("http://224.0.0.1/", "224.0.0.1", "a multicast address"),
    ],
)
def test_a_refusal_says_what_the_address_is_and_which_setting_allows_it(
    url: str, shown: str, kind: str
) -> None:
    with pytest.raises(security.OutboundURLError) as caught:
        security.check_outbound_url(url, allowlist=EMPTY, resolver=NAMES)
    detail = caught.value.detail
    assert detail.startswith(f"{shown} is {kind}"), detail
    assert "the operator who runs Studio allows it with the STUDIO_OUTBOUND_ALLOWLIST" in detail
    host = shown.split(" ")[0]
    assert detail.endswith(f"(e.g. STUDIO_OUTBOUND_ALLOWLIST={host})")
    # What it suggests admits exactly that URL.
    security.check_outbound_url(url, allowlist=security.Allowlist.parse([host]), resolver=NAMES)


def test_the_system_resolver_is_used_for_names(settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    with pytest.raises(security.OutboundURLError, match="localhost"):
        security.check_outbound_url("http://localhost:8000/v1")


# Through the API and the admin


def create_model(api: APIClient, base_url: str) -> Any:
    body = {"name": "m", "provider": "openai_compatible", "model": "x", "base_url": base_url}
    return api.post("/api/models/", body, format="json")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url",
    ["http://169.254.169.254/v1", "http://0x7f000001:8000/v1", "http://[::ffff:10.0.0.1]/v1"],
)
def test_the_api_refuses_to_store_a_private_base_url(api: APIClient, base_url: str) -> None:
    response = create_model(api, base_url)
    assert response.status_code == 400, response.content
    assert "base_url" in response.json()["detail"]
    assert not ModelConfig.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_to_move_a_config_to_a_private_base_url(api: APIClient, ada: User) -> None:
    config = ModelConfig.objects.create(
        owner=ada, name="m", provider="openai_compatible", model="x", base_url=""
    )
    response = api.patch(
        f"/api/models/{config.pk}/", {"base_url": "http://10.1.2.3/v1"}, format="json"
    )
    assert response.status_code == 400
    config.refresh_from_db()
    assert config.base_url == ""


@pytest.mark.django_db
def test_the_api_stores_an_allowlisted_loopback_base_url(api: APIClient, settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.0/8"]
    assert create_model(api, "http://127.0.0.1:11434/v1").status_code == 201


@pytest.mark.django_db
def test_the_admin_refuses_a_private_base_url(staff: User) -> None:
    from django.test import Client

    client = Client()
    client.force_login(staff)
    response = client.post(
        "/admin/studio/modelconfig/add/",
        {
            "owner": staff.pk,
            "name": "m",
            "provider": "openai_compatible",
            "base_url": "http://169.254.169.254/",
            "model": "x",
            "options": "{}",
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert not ModelConfig.objects.exists()


# At use: a config stored before the check (or by a name that now resolves elsewhere)


@pytest.mark.django_db
def test_a_run_refuses_a_stored_private_base_url(ada: User) -> None:
    config = ModelConfig.objects.create(
        owner=ada, name="m", provider="openai_compatible", model="x", base_url="http://127.1/v1"
    )
    with pytest.raises(OutboundRefusedError) as caught:
        build_llm(config)
    assert caught.value.code == "outbound_refused"


@pytest.mark.django_db
def test_test_connection_reports_a_refused_base_url_without_sending(
    api: APIClient, ada: User, openai_server: OpenAIServer
) -> None:
    config = ModelConfig.objects.create(
        owner=ada,
        name="m",
        provider="openai_compatible",
        model="x",
        base_url=openai_server.base_url,
    )
    body = api.post(f"/api/models/{config.pk}/test/").json()
    assert (body["ok"], body["code"]) == (False, "address_refused")
    assert "loopback" in body["detail"] and "STUDIO_OUTBOUND_ALLOWLIST" in body["detail"]
    assert openai_server.requests == []


# Redirects


class _Redirector(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_POST(self) -> None:
        self.send_response(307)
        self.send_header("Location", self.target + self.path.removeprefix("/v1"))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def redirector(openai_server: OpenAIServer) -> Iterator[str]:
    handler = type("Handler", (_Redirector,), {"target": openai_server.base_url})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.django_db
async def test_a_redirect_is_not_followed(
    ada: User, openai_server: OpenAIServer, redirector: str, settings: Any
) -> None:
    # The allowlist admits only the redirector's address, not (by port) the target:
    # whatever it admits, a redirect must never carry the request and key elsewhere.
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    config = ModelConfig(
        owner=ada,
        name="m",
        provider="openai_compatible",
        model="x",
        base_url=redirector,
        options={"streaming": False},
    )
    config.set_api_key("sk-canary-redirect-0000")
    openai_server.reply("should never be asked")
    llm = build_llm(config)
    request = LlmRequest(messages=[ChatMessage(role="user", text="hi")])
    with pytest.raises(Exception):  # noqa: B017, PT011 (any failure: the point is what follows)
        async for _ in llm.astream(request):
            pass
    assert openai_server.requests == []
