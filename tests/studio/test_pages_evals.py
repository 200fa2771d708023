"""The eval pages' server side: the list, the New eval form, an eval run's page and the
comparison of two, each the owner's alone (others 404, signed-out users to the
sign-in page), with what models and users wrote as text."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User

from studio import services
from studio.models import Agent
from studio.models.evals import EvalStatus
from tests.studio.conftest import make_agent, make_session, signed_in
from tests.support.eval_rows import dataset_version, eval_run, verdict

pytestmark = pytest.mark.django_db

MARKUP = "<b>bold</b> & <script>alert(1)</script>"
CASES = ["add", "subtract", "multiply", "divide"]


def new_version(agent: Agent, instruction: str) -> Agent:
    return services.update_agent(agent, spec={**agent.spec, "instruction": instruction})


@pytest.fixture
def two_evals(ada: User) -> tuple[object, object]:
    agent = make_agent(ada, "calculator")
    v1 = agent.current_version
    dataset = dataset_version(ada, CASES)
    session = make_session(ada, agent)
    before = eval_run(
        v1,
        dataset,
        {"add": ["passed"], "subtract": ["failed"], "multiply": ["passed"], "divide": ["failed"]},
        minutes_ago=10,
        session=session,
    )
    v2 = new_version(agent, "Reply: five").current_version
    after = eval_run(
        v2,
        dataset,
        {"add": ["failed"], "subtract": ["passed"], "multiply": ["passed"], "divide": ["failed"]},
        session=session,
    )
    return before, after


def test_the_list_shows_each_of_the_owners_evals_with_its_versions_and_pass_rate(
    ada: User, bob: User, two_evals: tuple[object, object]
) -> None:
    theirs = eval_run(
        make_agent(bob, "secret-agent").current_version,
        dataset_version(bob, ["x"], name="bobs-cases"),
        {"x": ["passed"]},
    )
    html = signed_in(ada).get("/evals/").content.decode()
    assert html.count('data-eval="') == 2
    assert "calculator@1" in html and "calculator@2" in html and "arithmetic@1" in html
    assert re.findall(r'data-testid="pass-rate">([^<]*)<', html) == ["50%", "50%"]
    # an eval that ran every case "finished" in a plain badge: a green "succeeded"
    # beside its 50% would read as a pass
    assert html.count('<span class="badge">finished</span>') == 2
    assert "succeeded" not in html
    assert str(theirs.pk) not in html and "secret-agent" not in html
    assert 'aria-current="page">Evals<' in html  # the nav's section


def test_every_eval_page_is_the_owners_alone(
    ada: User, bob: User, two_evals: tuple[object, object]
) -> None:
    before, after = two_evals
    pages = [
        f"/evals/{after.pk}/",  # type: ignore[attr-defined]
        f"/evals/compare/?a={before.pk}&b={after.pk}",  # type: ignore[attr-defined]
    ]
    for page in pages:
        assert signed_in(ada).get(page).status_code == 200
        assert signed_in(bob).get(page).status_code == 404
        anonymous = signed_in(bob).__class__().get(page)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    for page in ("/evals/", "/evals/new/", "/evals/compare/"):
        assert signed_in(bob).get(page).status_code == 200
    assert signed_in(ada).get("/evals/not-a-uuid/").status_code == 404


def test_an_eval_runs_page_carries_its_results_as_data_and_text(ada: User) -> None:
    agent = make_agent(ada, "calculator")
    dataset = dataset_version(ada, ["add", MARKUP])
    judged = verdict("failed", detail=MARKUP, prompt=f"Rubric: {MARKUP}")
    run = eval_run(
        agent.current_version,
        dataset,
        {"add": ["passed", "passed"], MARKUP: ["failed", "running"]},
        status=EvalStatus.RUNNING,
        verdicts={MARKUP: [judged]},
        session=make_session(ada, agent),
    )
    html = signed_in(ada).get(f"/evals/{run.pk}/").content.decode()
    assert "<b>bold</b>" not in html and "<script>alert(1)" not in html
    data = json.loads(
        re.search(r'id="eval-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    )  # type: ignore[union-attr]
    assert [(r["case_name"], r["repeat"], r["status"]) for r in data["results"]] == [
        ("add", 0, "passed"),
        ("add", 1, "passed"),
        (MARKUP, 0, "failed"),
        (MARKUP, 1, "running"),
    ]
    assert data["results"][2]["verdicts"][0]["prompt"] == f"Rubric: {MARKUP}"
    assert data["urls"]["socket"] == f"/ws/evals/{run.pk}/"
    # The summary so far (studio.evals.summary): 3 of 4 finished, 2 of 3 judged passed;
    # pass@2 over the cases judged twice: "add" alone.
    assert 'data-testid="eval-count">3 of 4 finished<' in html
    assert re.search(r'data-testid="pass-rate">67%<', html)
    assert re.search(r'id="fig-pass-at-k">100%<', html)
    assert 'id="cancel-eval">' in html  # running: cancellable (hidden when ended)


def test_compare_lists_regressions_first_then_improvements_then_the_rest(
    ada: User, two_evals: tuple[object, object]
) -> None:
    before, after = two_evals
    html = signed_in(ada).get(f"/evals/compare/?a={before.pk}&b={after.pk}").content.decode()  # type: ignore[attr-defined]
    groups = re.findall(r'data-testid="group-(\w+)"', html)
    assert groups == ["regressions", "improvements", "unchanged"]
    cases = re.findall(r'data-case="([^"]+)"', html)
    assert cases == ["add", "subtract", "multiply", "divide"]
    assert "1 regressed" in html and "1 improved" in html and "2 unchanged" in html
    assert html.count('data-testid="session-a"') == 4
    # Pass rate is the same (2 of 4 each): no change; p50 comes out alike too.
    assert re.search(r"Pass rate</th><td[^>]*>50%</td><td[^>]*>50%</td><td[^>]*>±0<", html)
    history = json.loads(
        re.search(r'id="eval-history" type="application/json">(.*?)</script>', html, re.S).group(1)
    )  # type: ignore[union-attr]
    assert [(p["version"], p["pass_rate"]) for p in history["points"]] == [(1, 50.0), (2, 50.0)]


def test_the_eval_page_links_to_the_comparison_with_the_eval_before(
    ada: User, two_evals: tuple[object, object]
) -> None:
    before, after = two_evals
    html = signed_in(ada).get(f"/evals/{after.pk}/").content.decode()  # type: ignore[attr-defined]
    assert f'href="/evals/compare/?a={before.pk}&amp;b={after.pk}"' in html  # type: ignore[attr-defined]
    first = signed_in(ada).get(f"/evals/{before.pk}/").content.decode()  # type: ignore[attr-defined]
    assert 'data-testid="compare-previous"' not in first


def test_the_new_eval_form_offers_only_the_owners_agents_and_datasets(ada: User, bob: User) -> None:
    make_agent(ada, "calculator")
    dataset_version(ada, ["add"])
    make_agent(bob, "secret-agent")
    dataset_version(bob, ["x"], name="bobs-cases")
    html = signed_in(ada).get("/evals/new/").content.decode()
    assert "calculator@1" in html and "arithmetic@1" in html
    assert "secret-agent" not in html and "bobs-cases" not in html
    empty = signed_in(User.objects.create_user("cy", password="pw")).get("/evals/new/")
    assert b"No agent to evaluate yet" in empty.content


def test_compare_writes_b_minus_a_and_whether_it_is_better(
    ada: User, two_evals: tuple[object, object]
) -> None:
    before, _ = two_evals
    agent = Agent.objects.get(owner=ada, name="calculator")
    worse = eval_run(
        new_version(agent, "Reply: nothing").current_version,
        before.dataset_version,  # type: ignore[attr-defined]
        {name: ["failed"] for name in CASES},
    )
    page = f"/evals/compare/?a={before.pk}&b={worse.pk}"  # type: ignore[attr-defined]
    html = signed_in(ada).get(page).content.decode()
    rows = re.findall(
        r'<th scope="row">([^<]+)</th><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>'
        r'<td class="num delta ([a-z]*)">([^<]*)</td>',
        html,
    )
    assert rows[0] == ("Pass rate", "50%", "0%", "bad", "\u221250 pts")
    assert rows[1] == ("pass@1", "50%", "0%", "bad", "\u221250 pts")
    assert rows[2][0] == "Cost" and rows[2][4] == "±0"  # 4 cases at $0.0012 each, both
    assert re.findall(r'data-testid="group-(\w+)"', html) == ["regressions", "unchanged"]
    swapped = signed_in(ada).get(f"/evals/compare/?a={worse.pk}&b={before.pk}").content.decode()
    assert "+50 pts" in swapped and 'class="num delta good"' in swapped
