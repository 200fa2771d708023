from __future__ import annotations

import re
from datetime import date
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents_core import events as core_events
from agents_core.contracts import Usage
from studio import figures, services
from studio.models import (
    Dataset,
    DatasetVersion,
    DaySpend,
    EvalRun,
    ModelConfig,
    RunStatus,
    Session,
)
from studio.runs import records
from studio.runs.records import Ending
from studio.services import datasets
from studio.session_service import append_event_sync
from tests.studio.conftest import make_agent, make_session

pytestmark = pytest.mark.django_db

KEY = "sk-admin-NEVER-SHOWN-1234567890"


@pytest.fixture
def admin_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def fill(session: Session, count: int) -> None:
    for i in range(count):
        event = core_events.Event(
            type=core_events.EventType.AGENT_MESSAGE,
            invocation_id="inv",
            session_id=session.key,
            author="helper",
            parts=[core_events.TextPart(text=f"event-{i + 1}-text")],
        )
        append_event_sync(session.key, event)


def test_non_staff_users_cannot_reach_the_admin(ada: User) -> None:
    client = Client()
    client.force_login(ada)
    response = client.get("/admin/studio/session/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    assert Client().get("/admin/").status_code == 302


def test_every_studio_admin_page_loads_for_staff(admin_client: Client, ada: User) -> None:
    agent = make_agent(ada)
    session = make_session(ada, agent)
    run = services.start_run(session, "hi")
    config = ModelConfig.objects.get(owner=ada)
    for url in [
        "/admin/studio/agent/",
        f"/admin/studio/agent/{agent.pk}/change/",
        "/admin/studio/modelconfig/",
        f"/admin/studio/modelconfig/{config.pk}/change/",
        "/admin/studio/modelconfig/add/",
        "/admin/studio/session/",
        f"/admin/studio/session/{session.pk}/change/",
        "/admin/studio/run/",
        f"/admin/studio/run/{run.pk}/change/",
    ]:
        assert admin_client.get(url).status_code == 200, url


def test_the_status_filters_name_every_status_alike(admin_client: Client) -> None:
    """Each status filter lists labels ("Waiting for a person" among "Queued" and
    "Paused"), not one lower-case name among them."""
    for page, waiting in (("run", "Waiting for a person"), ("session", "Waiting for a person")):
        html = admin_client.get(f"/admin/studio/{page}/").content.decode()
        filters = html[html.index('id="changelist-filter"') :]
        statuses = re.findall(r'href="\?status__exact=\w+"[^>]*>([^<]+)</a>', filters)
        assert waiting in statuses and "Paused" in statuses, statuses
        assert all(label[0].isupper() for label in statuses), statuses


def test_agent_versions_show_inline_and_read_only(admin_client: Client, ada: User) -> None:
    agent = make_agent(ada)
    services.save_agent_spec(agent, {"name": "helper", "model": "scripted", "instruction": "v2"})
    html = admin_client.get(f"/admin/studio/agent/{agent.pk}/change/").content.decode()
    assert "Agent versions" in html
    assert "versions-0-number" not in html  # rendered as text, not as an input
    assert "&quot;instruction&quot;: &quot;v2&quot;" in html


def test_the_model_config_admin_never_shows_the_key_and_can_replace_it(
    admin_client: Client, ada: User
) -> None:
    config = ModelConfig(owner=ada, name="prod", provider="openai_compatible", model="m")
    config.set_api_key(KEY)
    config.save()
    url = f"/admin/studio/modelconfig/{config.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert KEY not in page
    assert config.api_key_ciphertext not in page
    assert "...7890" in page
    listing = admin_client.get("/admin/studio/modelconfig/").content.decode()
    assert KEY not in listing
    form = {
        "owner": ada.pk,
        "name": "prod",
        "provider": "openai_compatible",
        "base_url": "",
        "model": "m",
        "options": "{}",
        "new_api_key": "sk-replaced-abcdefghijklmnop",
    }
    assert admin_client.post(url, form).status_code == 302
    config.refresh_from_db()
    assert config.api_key() == "sk-replaced-abcdefghijklmnop"
    history = admin_client.get(f"{url}../history/").content.decode()
    assert "sk-replaced" not in history


def test_the_model_config_admin_names_every_option_it_refuses(
    admin_client: Client, ada: User
) -> None:
    form = {
        "owner": ada.pk,
        "name": "offline",
        "provider": "scripted",
        "base_url": "",
        "model": "",
        "options": '{"base_url": "http://localhost:9/v1", "token_delay_s": "soon"}',
    }
    response = admin_client.post("/admin/studio/modelconfig/add/", form)
    assert response.status_code == 200  # the form again, saying why
    page = response.content.decode()
    assert "base_url: not an option of Scripted (offline) models (" in page
    assert "token_delay_s: Input should be a valid number" in page
    assert not ModelConfig.objects.filter(name="offline").exists()


def test_session_events_are_inline_read_only_and_paginated(admin_client: Client, ada: User) -> None:
    session = make_session(ada)
    fill(session, 60)
    url = f"/admin/studio/session/{session.pk}/change/"
    first = admin_client.get(url).content.decode()
    assert "event-1-text" in first and "event-50-text" in first
    assert "event-51-text" not in first
    assert "events_page=2" in first
    second = admin_client.get(f"{url}?events_page=2").content.decode()
    assert "event-51-text" in second and "event-60-text" in second
    assert "event-50-text" not in second
    assert 'name="events-0-seq"' not in first


def test_session_events_say_what_they_do_not_only_their_text(
    admin_client: Client, ada: User
) -> None:
    """A tool call, its result and an error have no text: the events' column says what
    each did, escaped as text (a model's output is never HTML the admin runs)."""
    session = make_session(ada)
    said = [
        core_events.ToolCallPart(call_id="c1", name="calculator", args={"expression": "6 * 7"}),
        core_events.ToolResponsePart(call_id="c1", name="calculator", result="<b>42</b>"),
    ]
    for part in said:
        event = core_events.Event(
            type=core_events.EventType.AGENT_MESSAGE
            if isinstance(part, core_events.ToolCallPart)
            else core_events.EventType.TOOL_RESPONSE,
            invocation_id="inv",
            session_id=session.key,
            author="helper",
            parts=[part],
        )
        append_event_sync(session.key, event)
    error = core_events.ErrorInfo(code="tool_failed", message="the disk is full")
    append_event_sync(
        session.key,
        core_events.Event(
            type=core_events.EventType.ERROR,
            invocation_id="inv",
            session_id=session.key,
            author="helper",
            error=error,
        ),
    )
    page = admin_client.get(f"/admin/studio/session/{session.pk}/change/").content.decode()
    assert "→ calculator({&quot;expression&quot;: &quot;6 * 7&quot;})" in page
    assert "← calculator: &lt;b&gt;42&lt;/b&gt;" in page and "<b>42</b>" not in page
    assert "! tool_failed: the disk is full" in page
    # A row whose payload no longer reads (written by hand) shows its text; the page loads.
    session.events.filter(seq=1).update(payload={"broken": True}, text="as stored")
    page = admin_client.get(f"/admin/studio/session/{session.pk}/change/").content.decode()
    assert "as stored" in page and "! tool_failed: the disk is full" in page


def test_saving_a_session_title_in_the_admin_keeps_its_events(
    admin_client: Client, ada: User
) -> None:
    session = make_session(ada)
    fill(session, 3)
    url = f"/admin/studio/session/{session.pk}/change/"
    form = {
        "title": "renamed",
        "events-TOTAL_FORMS": "3",
        "events-INITIAL_FORMS": "3",
        "events-MIN_NUM_FORMS": "0",
        "events-MAX_NUM_FORMS": "1000",
    }
    form.update({f"events-{i}-id": str(e.pk) for i, e in enumerate(session.events.order_by("seq"))})
    form.update({f"events-{i}-session": str(session.pk) for i in range(3)})
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    session.refresh_from_db()
    assert (session.title, session.events.count()) == ("renamed", 3)


def test_a_session_exports_as_json_from_its_page_and_as_an_action(
    admin_client: Client, ada: User
) -> None:
    session = make_session(ada)
    fill(session, 2)
    single = admin_client.get(f"/admin/studio/session/{session.pk}/export/")
    assert single.status_code == 200
    assert "attachment" in single["Content-Disposition"]
    assert [e["seq"] for e in single.json()["events"]] == [1, 2]
    assert single.json()["agent"]["version"]["spec"]["name"] == "helper"
    action = admin_client.post(
        "/admin/studio/session/",
        {"action": "export_as_json", "_selected_action": [str(session.pk)]},
    )
    assert action.status_code == 200
    assert action.json()["sessions"][0]["session"]["id"] == str(session.pk)


def test_the_cancel_action_cancels_active_runs_and_skips_finished_ones(
    admin_client: Client, ada: User
) -> None:
    active = services.start_run(make_session(ada), "one")
    done = services.start_run(make_session(ada), "two")
    records.end_run(done.pk, Ending(RunStatus.SUCCEEDED))
    response = admin_client.post(
        "/admin/studio/run/",
        {"action": "cancel_runs", "_selected_action": [str(active.pk), str(done.pk)]},
        follow=True,
    )
    assert "Cancelled 1 run(s); 1 had already finished." in response.content.decode()
    active.refresh_from_db()
    done.refresh_from_db()
    assert (active.status, done.status) == ("cancelled", "succeeded")


def test_the_pause_and_resume_actions_change_only_runs_they_apply_to(
    admin_client: Client, ada: User
) -> None:
    running = services.start_run(make_session(ada), "one")
    assert records.claim_run(running, owner="elsewhere", lease_s=30)
    queued = services.start_run(make_session(ada), "two")
    selected = [str(running.pk), str(queued.pk)]
    paused = admin_client.post(
        "/admin/studio/run/", {"action": "pause_runs", "_selected_action": selected}, follow=True
    )
    assert "Paused 1 run(s); 1 were not running." in paused.content.decode()
    running.refresh_from_db()
    assert running.status == RunStatus.PAUSED
    resumed = admin_client.post(
        "/admin/studio/run/", {"action": "resume_runs", "_selected_action": selected}, follow=True
    )
    assert "Resumed 1 run(s); 1 were not paused." in resumed.content.decode()
    running.refresh_from_db()
    queued.refresh_from_db()
    assert (running.status, queued.status) == (RunStatus.RUNNING, RunStatus.QUEUED)


def test_the_run_list_writes_tokens_and_durations_as_the_pages_do(
    admin_client: Client, ada: User
) -> None:
    run = services.start_run(make_session(ada), "count")
    records.end_run(
        run.pk, Ending(RunStatus.SUCCEEDED), usage=Usage(input_tokens=1204, output_tokens=88)
    )
    idle = services.start_run(make_session(ada), "nothing yet")
    page = admin_client.get("/admin/studio/run/").content.decode()
    assert "1,204 in · 88 out" in page
    row = page[page.index(str(idle.pk)[:8]) :].split("</tr>", 1)[0]
    assert "in ·" not in row  # a run with no tokens yet shows none, not "0 in · 0 out"
    run.refresh_from_db()
    assert figures.duration(run.ended_at - (run.started_at or run.created_at)) in page


def test_eval_runs_and_their_results_are_read_only_for_staff(
    admin_client: Client, ada: User
) -> None:
    from studio import evals
    from tests.support.eval_runs import case, echo_agent, make_dataset

    agent = echo_agent(ada)
    dataset = make_dataset(ada, "smoke", [case("greets", "hello", expect="hello")])
    eval_run = evals.create_eval(ada, agent=agent, dataset=dataset)
    result = eval_run.results.get()
    for url in (
        "/admin/studio/evalrun/",
        f"/admin/studio/evalrun/{eval_run.pk}/change/",
        "/admin/studio/evalcaseresult/",
        f"/admin/studio/evalcaseresult/{result.pk}/change/",
    ):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert "greets" in response.content.decode() or url.endswith("/evalrun/")
    assert "smoke v1" in admin_client.get("/admin/studio/evalrun/").content.decode()
    type(result).objects.filter(pk=result.pk).update(cost=Decimal("0.000152"))
    listed = admin_client.get("/admin/studio/evalcaseresult/").content.decode()
    assert '<td class="field-spent">0.000152</td>' in listed  # not "0.0001520000"
    assert admin_client.get("/admin/studio/evalrun/add/").status_code == 403
    page = admin_client.get(f"/admin/studio/evalrun/{eval_run.pk}/change/").content.decode()
    assert 'name="_save"' not in page  # nothing to save: read-only
    deleted = admin_client.post(f"/admin/studio/evalrun/{eval_run.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    client = Client()
    client.force_login(ada)
    assert client.get("/admin/studio/evalrun/").status_code == 302  # not staff: sign in


def test_the_days_spend_list_writes_its_costs_as_costs(admin_client: Client, ada: User) -> None:
    DaySpend.objects.create(
        scope=f"user:{ada.pk}", day=date(2026, 12, 6), cost_spent=Decimal("0.000248")
    )
    listed = admin_client.get("/admin/studio/dayspend/").content.decode()
    assert '<td class="field-spent">$0.00025</td>' in listed  # not "0.0002480000"
    assert '<td class="field-reserved">$0.00</td>' in listed


def test_datasets_show_their_versions_read_only_and_a_pinned_one_is_kept(
    admin_client: Client, ada: User
) -> None:
    case = {"name": "<b>a</b>", "input": {"turns": ["hi"]}}
    made = datasets.create_dataset(ada, "smoke", cases=[case])
    version = DatasetVersion.objects.get(dataset=made)
    page = admin_client.get(f"/admin/studio/dataset/{made.pk}/change/").content.decode()
    assert "&lt;b&gt;a&lt;/b&gt;" in page and "<b>a</b>" not in page
    assert admin_client.get("/admin/studio/dataset/").status_code == 200
    assert admin_client.get("/admin/studio/dataset/add/").status_code == 403
    shown = admin_client.get(f"/admin/studio/datasetversion/{version.pk}/change/")
    assert shown.status_code == 200 and 'name="number"' not in shown.content.decode()
    agent = make_agent(ada)
    assert agent.current_version is not None
    EvalRun.objects.create(owner=ada, agent_version=agent.current_version, dataset_version=version)
    refused = admin_client.post(f"/admin/studio/dataset/{made.pk}/delete/", {"post": "yes"})
    assert refused.status_code == 200 and "Cannot delete dataset" in refused.content.decode()
    assert Dataset.objects.filter(pk=made.pk).exists()
