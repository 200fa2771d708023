"""Every page of the app in Chromium, as the demo user, as staff and signed out, on a
phone (390 px), a tablet (820 px), a laptop (1280 px) and a desktop (1440 px): no console error, no
Content-Security-Policy violation, no failed request and nothing wider than the window
(tests/e2e/page_checks.py).

The pages come from Django's URL resolver, not from a list: each named route of
``studio.urls`` that answers GET (a route refusing GET with 405 is an action: delete,
duplicate, test), its ``<pk>`` filled with one of the user's objects; the admin's index,
the changelist of each model it registers, the add page of each it lets staff add to,
and the change page of one object of each of Studio's models; and /api/docs/. A page
added later is visited without touching this file; a route it cannot fill fails
``test_every_route_is_a_visited_page_an_action_or_excluded`` until it is taught how (or
excluded below, with the reason). Screenshots: var/screenshots/every-page/<user>-<width>/.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import RequestFactory
from django.urls import URLResolver, get_resolver, reverse
from playwright.sync_api import Browser, BrowserContext

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import DEMO, TIMEOUT_MS, Api
from tests.e2e.page_checks import Visit, look_at
from tests.support.daphne_server import DaphneServer

STAFF = ("staff", "staff-password-e2e")
TITLE = "What is 2 + 3? Asked with a session title long enough to wrap on a phone's screen"
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}

EXCLUDED = {
    "healthz": "the load balancer's health check: JSON, not a page",
    "favicon": "the icon (a redirect to an SVG file), not a page",
    "metrics": "Prometheus' scrape endpoint: plain text for staff or a token, not a page "
    "(tests/studio/test_metrics.py)",
    "session-artifacts": "the session page's Artifacts panel alone, a fragment it swaps in "
    "(tests/e2e/test_artifacts.py)",
    "session-dataset-card": "the session page's Add-to-dataset card alone, a fragment it "
    "swaps in when a run ends (tests/e2e/test_pages_datasets.py)",
    "attached-file": "an attached file's bytes, served to its owner only, not a page "
    "(tests/studio/test_api_attachments.py)",
    "otlp-traces": "OTLP/HTTP trace ingest for exporters (protobuf or JSON, token auth), "
    "not a page (tests/studio/test_otlp_ingest.py)",
}
"""Named routes that are not pages, each with the reason."""

INCLUDES = {
    "admin/": "the admin: its index, changelists, add and change pages (admin_paths)",
    "api/": "the REST API answers JSON; its one page, /api/docs/, is visited by name",
}
"""The URLconfs ``studio.urls`` includes, and how their pages are visited."""

FOLDERS = {
    "agents": "agent",
    "datasets": "dataset",
    "evals": "eval_run",
    "models": "model",
    "mcp-servers": "mcp_server",
    "mcp-tokens": "mcp_token",
    "remote-agents": "remote_agent",
    "settings": "ingest_token",  # settings/trace-ingest/<pk>/revoke/
    "memories": "memory",
    "sessions": "session",
    "skills": "skill",
    "templates": "template",
}
"""Which of the user's objects fills the one parameter (``<pk>``, or a template's
``<name>``) of a route under each folder."""

ADMIN_OBJECTS = {
    "agent": "agent",
    "modelconfig": "model",
    "mcpserver": "stdio_server",
    "session": "session",
    "run": "run",
    "userbudget": "user_budget",
    "dayspend": "day_spend",
    "dataset": "dataset",
    "datasetversion": "dataset_version",
    "evalrun": "eval_run",
    "evalcaseresult": "eval_result",
    "remoteagent": "remote_agent",
}
"""Which of staff's objects the admin's change page of each of Studio's models shows."""

READY = {"api-docs": "#swagger-ui .information-container .title"}
"""Pages that draw after loading without being Studio's: what shows once they have."""


@dataclass(frozen=True)
class Objects:
    """One user's objects: the ids that fill the routes' ``<pk>``."""

    agent: str
    model: str
    mcp_server: str
    stdio_server: str
    session: str
    run: str
    template: str = ""
    """A prompt template's name."""
    memory: str = ""
    skill: str = ""
    """A skill's name."""
    mcp_token: str = ""
    ingest_token: str = ""
    dataset: str = ""
    dataset_version: str = ""
    """A dataset of the user's (with a hostile case) and its first version."""
    eval_run: str = ""
    eval_result: str = ""
    remote_agent: str = ""
    """A remote A2A agent whose card could not be read (a closed port): the error shows."""
    """An eval of the user's agent on that dataset, ended, and its one case result."""
    imported: str = ""
    """A read-only session imported from the session's run bundle (studio.bundles)."""
    user_budget: str = ""
    day_spend: str = ""
    """Staff's: a user's daily budget and a day's spend row, as the admin shows them."""


def route_paths(objects: Objects) -> tuple[dict[str, str], list[str]]:
    """Each named route of ``studio.urls`` (not the admin's or the API's) as a path, by
    name, and the routes that could not be filled."""
    paths: dict[str, str] = {}
    unfilled: list[str] = []
    for pattern in get_resolver().url_patterns:
        if isinstance(pattern, URLResolver):
            if str(pattern.pattern) not in INCLUDES:
                unfilled.append(f"{pattern.pattern}: an included URLconf this test does not know")
            continue
        if pattern.name in EXCLUDED:
            continue
        if not pattern.name:
            unfilled.append(f"{pattern.pattern}: name the route, so this test can visit it")
            continue
        params = set(pattern.pattern.converters)
        kind = FOLDERS.get(str(pattern.pattern).split("/")[0])
        if params and (len(params) != 1 or kind is None):
            unfilled.append(f"{pattern.name}: {pattern.pattern}")
            continue
        kwargs = {params.pop(): getattr(objects, kind)} if params and kind else {}
        paths[pattern.name] = reverse(pattern.name, kwargs=kwargs)
    return paths, unfilled


ADMIN_UNSHOWN = {
    "approvaldecision": "an audit row, read-only, made only by deciding a waiting call "
    "(tests/studio/test_web_approvals.py reads its change page in the admin)",
}
"""Studio models whose admin change page this test does not visit, each with the reason."""


def admin_paths(objects: Objects) -> tuple[dict[str, str], list[str]]:
    """The admin's pages by name (``admin-<model>-list``...), and the models of Studio
    whose change page has no object to show."""
    superuser = RequestFactory().get("/")
    superuser.user = User(is_active=True, is_staff=True, is_superuser=True)
    paths = {
        "admin-index": reverse("admin:index"),
        "admin-studio": reverse("admin:app_list", kwargs={"app_label": "studio"}),
    }
    unfilled: list[str] = []
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        prefix, name = f"admin:{meta.app_label}_{meta.model_name}", f"admin-{meta.model_name}"
        paths[f"{name}-list"] = reverse(f"{prefix}_changelist")
        if model_admin.has_add_permission(superuser):
            paths[f"{name}-add"] = reverse(f"{prefix}_add")
        if meta.app_label != "studio":
            continue
        if meta.model_name in ADMIN_UNSHOWN:
            continue
        if (kind := ADMIN_OBJECTS.get(meta.model_name)) is None:
            unfilled.append(f"{prefix}_change: no object of {meta.label} to show")
            continue
        paths[f"{name}-change"] = reverse(f"{prefix}_change", args=[getattr(objects, kind)])
    return paths, unfilled


# The site: a staff account, and for demo and staff an agent, a model, an HTTP and a
# stdio MCP server and a session with a finished run.


def wait_for_run_end(api: Api, run_id: str) -> None:
    deadline = time.monotonic() + 30
    while api.get(f"/api/runs/{run_id}/")["status"] not in ENDED:
        assert time.monotonic() < deadline, f"run {run_id} did not end"
        time.sleep(0.1)


def arrange(api: Api, agent: dict[str, Any], stdio_server: str) -> Objects:
    session = api.post("/api/sessions/", {"agent": agent["id"], "title": TITLE})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": "What is 2 + 3?"})
    server = {"name": "docs", "transport": "http", "url": "http://127.0.0.1:9/mcp"}
    mcp_server = api.post("/api/mcp-servers/", server)
    remote = {"name": "billing", "url": "http://127.0.0.1:9/", "token": "tok-123"}
    remote_agent = api.post("/api/remote-agents/", remote)
    template = {
        "name": "support",
        "source": "You help {{ customer }}.\n{% if tier %}Tier: {{ tier }}{% endif %}",
    }
    api.post("/api/prompt-templates/", template)
    memory = api.post(
        "/api/memories/", {"agent": agent["spec"]["name"], "text": "<b>Likes tea</b>"}
    )
    skill = api.upload("/api/skills/", "archive", "skill.zip", SKILL_ZIP)
    hostile = {
        "name": "<b>bold</b>",
        "input": {"turns": ["<script>alert(1)</script> " * 8], "state": {"k": "<i>v</i>"}},
        "expect": {"final_output": "5", "tool_calls": [{"name": "calculator", "args": {}}]},
        "tags": ["<u>tag</u>"],
    }
    dataset = api.post("/api/datasets/", {"name": "evals", "cases": [hostile]})
    versions = api.get(f"/api/datasets/{dataset['id']}/versions/")
    wait_for_run_end(api, run["id"])
    eval_run = start_eval(api, agent["id"], dataset["id"])
    # A fork of it, so the session page shows its fork tree (services.forks).
    last_seq = api.get(f"/api/sessions/{session['id']}/")["last_seq"]
    api.post(f"/api/sessions/{session['id']}/forks/", {"seq": last_seq})
    bundle = json.dumps(api.get(f"/api/sessions/{session['id']}/bundle/")).encode()
    imported = api.upload("/api/bundles/import/", "file", "session.studio-run.json", bundle)
    return Objects(
        agent=agent["id"],
        model=api.get("/api/models/")["results"][0]["id"],
        mcp_server=mcp_server["id"],
        stdio_server=stdio_server,
        session=session["id"],
        run=run["id"],
        template=template["name"],
        memory=str(memory["id"]),
        skill=skill["name"],
        dataset=dataset["id"],
        dataset_version=versions[0]["id"],
        eval_run=eval_run["id"],
        eval_result=api.get(f"/api/evals/{eval_run['id']}/results/")["results"][0]["id"],
        imported=imported["id"],
        remote_agent=remote_agent["id"],
    )


def start_eval(api: Api, agent: str, dataset: str) -> dict[str, Any]:
    """An eval of ``agent`` on ``dataset`` (through the API, as the New eval form
    starts one), once it has ended: its page then shows a judged case."""
    body = {"agent": agent, "dataset": dataset, "evaluators": [{"kind": "contains"}]}
    started = api.post("/api/evals/", body)
    deadline = time.monotonic() + 60
    while (found := api.get(f"/api/evals/{started['id']}/"))["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"eval {started['id']} did not end"
        time.sleep(0.1)
    return found  # type: ignore[no-any-return]


def _skill_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "tea/SKILL.md",
            "---\nname: tea-brewing\ndescription: Brew <b>tea</b>.\n---\n# Brew\n<i>Steep</i> it.",
        )
        archive.writestr("tea/steps.md", "1. Boil <script>water</script>.")
    return buffer.getvalue()


SKILL_ZIP = _skill_zip()

STDIO = {
    "name": "files",
    "transport": "stdio",
    "description": "Reads the workspace's files",
    "command": "/usr/bin/python3",
    "args": ["-m", "mcp_server_filesystem", "--root", "/srv/studio/workspaces/shared/docs"],
}
ACCOUNTS = f"""
import json
from django.contrib.auth.models import User
import datetime
from studio.models import DaySpend, McpServer, UserBudget
from studio.models import IngestToken
from studio.services import create_token, tokens as token_service
staff = User.objects.create_superuser({STAFF[0]!r}, "staff@example.com", {STAFF[1]!r})
budget = UserBudget.objects.create(user=staff, day_cost="5", day_tokens=100000)
spend = DaySpend.objects.create(scope=f"user:{{staff.pk}}", day=datetime.date.today())
# A stdio server of demo's, as staff give one in the admin (the API lets staff
# register one only for themselves).
server = McpServer.objects.create(owner=User.objects.get(username="demo"), **{STDIO!r})
demo = User.objects.get(username="demo")
tokens = [str(create_token(user, "laptop")[0].pk) for user in (demo, staff)]
tokens += [
    str(token_service.create_token(IngestToken, user, "exporter")[0].pk) for user in (demo, staff)
]
print(json.dumps([str(server.pk), str(budget.pk), str(spend.pk), *tokens]))
"""
"""A staff account, demo's stdio server and an MCP and an ingest token each, in one start
of Django."""


@pytest.fixture(scope="module")
def objects(pages_server: DaphneServer, api: Api) -> dict[str, Objects]:
    created = pages_server.manage("shell", "-c", ACCOUNTS).stdout.strip().splitlines()
    made = json.loads(created[-1])
    demo_stdio, user_budget, day_spend, demo_token, staff_token = made[:5]
    demo_ingest, staff_ingest = made[5:]
    staff = Api(pages_server.url, STAFF)
    calculator = next(a for a in api.get("/api/agents/")["results"] if a["name"] == "calculator")
    # Staff's copy of the calculator answers at once: the scripted model, not the paced one.
    staff.model("scripted")
    staff_spec = {**calculator["spec"], "model": "scripted"}
    staff_agent = staff.agent(staff_spec, calculator["description"])
    staff_stdio = staff.post("/api/mcp-servers/", STDIO)["id"]
    return {
        "demo": dataclasses.replace(
            arrange(api, calculator, demo_stdio), mcp_token=demo_token, ingest_token=demo_ingest
        ),
        "staff": dataclasses.replace(
            arrange(staff, staff_agent, staff_stdio),
            user_budget=user_budget,
            day_spend=day_spend,
            mcp_token=staff_token,
            ingest_token=staff_ingest,
        ),
    }


# Who sees which pages.


@pytest.fixture(scope="module")
def storage(browser: Browser, pages_server: DaphneServer) -> dict[str, Any]:
    """Each user's signed-in browser state, signed in once through the sign-in form."""
    states: dict[str, Any] = {"anonymous": None}
    for user in (DEMO, STAFF):
        context = browser.new_context(base_url=pages_server.url)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", user[0])
        page.fill("#id_password", user[1])
        page.click("button[type=submit] >> text=Sign in")
        page.wait_for_url(f"{pages_server.url}/")
        states[user[0]] = context.storage_state()
        context.close()
    return states


@pytest.fixture(scope="module")
def contexts(
    browser: Browser, pages_server: DaphneServer, storage: dict[str, Any]
) -> Iterator[dict[str, BrowserContext]]:
    """A browser context per user (signed out, demo, staff)."""
    made = {
        user: browser.new_context(base_url=pages_server.url, storage_state=state)
        for user, state in storage.items()
    }
    for context in made.values():
        context.set_default_timeout(TIMEOUT_MS)
    yield made
    for context in made.values():
        context.close()


@dataclass
class Site:
    visits: dict[str, list[Visit]]
    actions: list[str]
    unfilled: list[str]


EXPECTED_STATUS = {("demo", "mcp-server-new-stdio"): 403}
"""Pages a user may not see: the page saying so, with its status."""


@pytest.fixture(scope="module")
def site(objects: dict[str, Objects], contexts: dict[str, BrowserContext]) -> Site:
    """What each user visits. A route that refuses GET (405) is an action, not a page."""
    visits: dict[str, list[Visit]] = {
        "anonymous": [
            Visit(reverse("login"), "login"),
            Visit(reverse("admin:login"), "admin-login"),
        ]
    }
    actions: set[str] = set()
    unfilled: set[str] = set()
    for user, mine in objects.items():
        routes, missing = route_paths(mine)
        extra, missing_admin = admin_paths(mine) if user == "staff" else ({}, [])
        unfilled.update(missing, missing_admin)
        request = contexts[user].request
        visits[user] = []
        for name, path in routes.items():
            if request.get(path, max_redirects=0).status == 405:
                actions.add(name)
                continue
            status = EXPECTED_STATUS.get((user, name), 200)
            visits[user].append(Visit(path, name, status, READY.get(name)))
        visits[user] += [Visit(path, name) for name, path in extra.items()]
        visits[user].append(Visit(reverse("api-docs"), "api-docs", ready=READY["api-docs"]))
        # A stdio server: read-only for demo (403 where it would be changed), the
        # admin's change page for staff.
        stdio = reverse("mcp-server-edit", kwargs={"pk": mine.stdio_server})
        visits[user].append(Visit(stdio, "mcp-server-edit-stdio", 403 if user == "demo" else 200))
        # Comparing runs: the picker alone is the route's page; here two runs compared
        # (the user's one run with itself; tests/e2e/test_pages_compare.py compares two).
        compared = f"{reverse('run-compare')}?a={mine.run}&b={mine.run}"
        visits[user].append(Visit(compared, "run-compare-runs"))
        # Two evals compared, likewise the one eval with itself (test_pages_evals.py: two).
        evals = f"{reverse('eval-compare')}?a={mine.eval_run}&b={mine.eval_run}"
        visits[user].append(Visit(evals, "eval-compare-runs"))
        # The playground with a session open: its head has the title and the links.
        played = f"{reverse('playground')}?session={mine.session}"
        visits[user].append(Visit(played, "playground-session"))
        # An imported session (read-only): its timeline and waterfall.
        for name in ("session-timeline", "session-waterfall"):
            path = reverse(name, kwargs={"pk": mine.imported})
            visits[user].append(Visit(path, f"{name}-imported"))
    return Site(visits, sorted(actions), sorted(unfilled))


def test_every_route_is_a_visited_page_an_action_or_excluded(site: Site) -> None:
    assert site.unfilled == [], "teach this test to fill these routes, or exclude them"
    names = {visit.name for visit in site.visits["staff"]}
    assert {"home", "agent-edit", "session-timeline", "mcp-server-edit", "api-docs"} <= names
    assert {"admin-index", "admin-run-list", "admin-run-change", "admin-mcpserver-add"} <= names
    assert {"logout", "agent-delete", "mcp-server-test", "session-delete"} <= set(site.actions)
    assert "session-import" in site.actions and "session-timeline-imported" in names
    assert {"prompt-templates", "prompt-template"} <= names and "prompt-template-delete" in set(
        site.actions
    )
    assert "memories" in names and {"memory-edit", "memory-delete"} <= set(site.actions)
    assert {"skills", "skill"} <= names and "skill-delete" in set(site.actions)
    assert "mcp-tokens" in names and {"mcp-token-revoke", "a2a-publish"} <= set(site.actions)
    assert {"run-compare", "run-compare-runs"} <= names
    assert {"datasets", "dataset", "admin-dataset-change", "admin-datasetversion-change"} <= names
    assert {"dataset-create", "dataset-import", "session-dataset-case"} <= set(site.actions)
    assert {"evals", "eval-new", "eval-run", "eval-compare", "eval-compare-runs"} <= names
    assert {"admin-evalrun-change", "admin-evalcaseresult-change"} <= names
    assert {"remote-agents", "remote-agent-new", "remote-agent-edit"} <= names
    assert {"remote-agent-delete", "remote-agent-test"} <= set(site.actions)
    assert "admin-remoteagent-change" in names
    assert not names & set(site.actions)


@pytest.mark.timeout(360)  # staff: every admin page at four widths, over 120 s on 2 cores
@pytest.mark.parametrize("user", ["demo", "staff", "anonymous"])
def test_every_page_loads_cleanly_and_fits_a_phone_a_tablet_a_laptop_and_a_desktop(
    site: Site, contexts: dict[str, BrowserContext], pages_server: DaphneServer, user: str
) -> None:
    problems = [
        problem
        for visit in site.visits[user]
        for problem in look_at(contexts[user], pages_server.url, visit, user)
    ]
    assert problems == [], "\n".join(problems)
