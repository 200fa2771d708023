"""The datasets pages: signed-in owners only; an upload refused whole with the line that
is wrong; cases (and anything hostile in them) shown as text; an older version read-only;
a case added and deleted as new versions; and the session page's "add this turn"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from studio.models import Dataset, DatasetVersion
from studio.services import datasets
from tests.studio.conftest import make_session, signed_in
from tests.studio.test_api_datasets import calculator_agent, ran

LIST = "/datasets/"
EVALSET = Path(__file__).parents[1] / "support" / "evals" / "home_automation.evalset.json"
HOSTILE = "<script>alert(1)</script>"


def _case(name: str, text: str = "hi", **expect: Any) -> dict[str, Any]:
    return {"name": name, "input": {"turns": [text]}, "expect": expect}


@pytest.mark.django_db
def test_the_pages_need_a_signed_in_owner(ada: User, bob: User) -> None:
    mine = datasets.create_dataset(ada, "mine", cases=[_case("a")])
    assert Client().get(LIST).status_code == 302
    assert Client().get(f"{LIST}{mine.pk}/").status_code == 302
    bobs = signed_in(bob)
    assert bobs.get(f"{LIST}{mine.pk}/").status_code == 404
    assert (
        bobs.post(f"{LIST}{mine.pk}/cases/add/", {"name": "x", "message": "y"}).status_code == 404
    )
    assert bobs.post(f"{LIST}{mine.pk}/cases/delete/", {"name": "a"}).status_code == 404
    assert bobs.post(f"{LIST}{mine.pk}/delete/").status_code == 404
    assert 'data-dataset="mine"' not in bobs.get(LIST).content.decode()
    session = make_session(ada)
    turn = bobs.post(f"/sessions/{session.pk}/dataset-case/", {"dataset": "mine"})
    assert turn.status_code == 404
    assert bobs.get(f"/sessions/{session.pk}/dataset-card/").status_code == 404
    assert Client().get(f"/sessions/{session.pk}/dataset-card/").status_code == 302
    card = signed_in(ada).get(f"/sessions/{session.pk}/dataset-card/").content.decode()
    assert card.lstrip().startswith("<section") and "Once a run of this session ends" in card
    assert DatasetVersion.objects.filter(dataset=mine).count() == 1


@pytest.mark.django_db
def test_an_adk_upload_shows_its_cases_as_text(ada: User) -> None:
    client = signed_in(ada)
    file = SimpleUploadedFile(EVALSET.name, EVALSET.read_bytes())
    page = client.post(f"{LIST}import/", {"file": file}, follow=True).content.decode()

    assert "Imported 3 cases as new dataset home_automation_agent_light_on_off_set (adk)." in page
    assert 'data-case="check_then_switch_on"' in page
    assert "Switch it on, please." in page and "set_device_info" in page
    listed = client.get(LIST).content.decode()
    assert 'data-dataset="home_automation_agent_light_on_off_set"' in listed


@pytest.mark.django_db
def test_a_bad_upload_says_which_line_and_stores_nothing(ada: User) -> None:
    bad = b'{"name": "a", "input": {"turns": ["x"]}}\n{"name": "b", "input": {}}\n'
    response = signed_in(ada).post(
        f"{LIST}import/", {"file": SimpleUploadedFile("cases.jsonl", bad)}
    )
    assert response.status_code == 400
    assert "line 2: input.turns: Field required" in response.content.decode()
    assert not Dataset.objects.exists()


@pytest.mark.django_db
def test_cases_are_added_and_deleted_as_versions_and_old_ones_read_only(ada: User) -> None:
    client = signed_in(ada)
    made = client.post(f"{LIST}new/", {"name": "smoke"}, follow=True)
    assert "Created dataset smoke." in made.content.decode()
    dataset = Dataset.objects.get(owner=ada, name="smoke")
    url = f"{LIST}{dataset.pk}/"
    added = client.post(
        f"{url}cases/add/",
        {
            "name": HOSTILE,
            "message": f"say {HOSTILE}",
            "expected_output": HOSTILE,
            "expected_tool_calls": '[{"name": "calculator", "args": {"x": "<b>1</b>"}}]',
            "tags": "smoke, <i>x</i>",
        },
        follow=True,
    )
    page = added.content.decode()
    assert "<script>alert(1)" not in page and "<b>1</b>" not in page and "<i>x</i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'aria-current="true"' in page  # the new case is highlighted
    refused = client.post(
        f"{url}cases/add/", {"name": "x", "message": "m", "expected_tool_calls": "{"}
    )
    assert refused.status_code == 400 and "not valid JSON" in refused.content.decode()
    taken = client.post(f"{url}cases/add/", {"name": HOSTILE, "message": "m"})
    assert "already has a case named" in taken.content.decode()
    client.post(f"{url}cases/delete/", {"name": HOSTILE})

    dataset.refresh_from_db()
    assert dataset.current_version is not None and dataset.current_version.number == 3
    old = client.get(url, {"version": 2}).content.decode()
    assert 'data-testid="old-version"' in old and 'data-testid="case-add"' not in old
    assert "calculator" in old
    latest = client.get(url).content.decode()
    assert 'data-testid="cases-empty"' in latest and 'data-testid="version-picker"' in latest


@pytest.mark.django_db(transaction=True)
async def test_a_sessions_turn_is_added_from_its_page(ada: User) -> None:
    agent = await sync_to_async(calculator_agent)(ada)
    session = await sync_to_async(make_session)(ada, agent)
    run = await ran(session, "What is (12 + 30) * 2?")
    client = await sync_to_async(signed_in)(ada)
    url = f"/sessions/{session.pk}/"

    page = (await sync_to_async(client.get)(url)).content.decode()
    assert 'data-testid="add-to-dataset"' in page and "What is (12 + 30) * 2?" in page
    # The card alone, as the page reads it again when a run ends there.
    card = (await sync_to_async(client.get)(f"{url}dataset-card/")).content.decode()
    assert card.lstrip().startswith("<section") and f'<option value="{run.pk}"' in card
    response = await sync_to_async(client.post)(
        f"{url}dataset-case/",
        {"run": str(run.pk), "dataset": "from-sessions", "name": ""},
        follow=True,
    )
    shown = response.content.decode()
    assert "Added case what-is-12-30-2 to from-sessions (v2)." in shown
    assert 'data-testid="added-case"' in shown and "The answer is 84." in shown
    assert "{&quot;expression&quot;: &quot;(12 + 30) * 2&quot;}" in shown
    refused = await sync_to_async(client.post)(
        f"{url}dataset-case/", {"run": str(run.pk), "dataset": "9 bad"}, follow=True
    )
    assert "Not added: dataset: no dataset of yours" in refused.content.decode()
