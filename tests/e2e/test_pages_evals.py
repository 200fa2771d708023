"""The eval pages in Chromium: the list, the New eval form, an eval run's page with its
verdicts (a judge's prompt behind <details>), a case's session one click away, and the
comparison of two evals with the regression first, at a laptop's and a phone's width
in light and dark. Screenshots: var/screenshots/evals/."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api
from tests.e2e.page_checks import Visit, look_at
from tests.support.daphne_server import DaphneServer

MARKUP = "<b>bold</b> & <script>alert(1)</script>"

ARRANGE = """
import json
from studio.models import Agent, Session
from studio import services
from tests.support.eval_rows import dataset_version, eval_run, verdict
agent = Agent.objects.get(owner__username="demo", name="calculator")
session = services.start_session(agent.owner, agent, title="What is 2 + 3?")
cases = ["add two numbers", "subtract", "multiply a long list of numbers", "divide by zero", MARKUP]
dataset = dataset_version(agent.owner, cases)
judge = verdict("failed", detail="The answer says 6; the expected answer is 5. " + MARKUP,
                evaluator="judge", prompt="Rubric: the answer is the sum.\\n\\nCase: " + MARKUP)
before = eval_run(agent.current_version, dataset,
                  {"add two numbers": ["passed", "passed"], "subtract": ["failed", "passed"],
                   "multiply a long list of numbers": ["passed", "passed"],
                   "divide by zero": ["error", "error"], MARKUP: ["passed", "failed"]},
                  minutes_ago=30, session=session)
spec = {**agent.spec, "instruction": agent.spec["instruction"] + " Be brief."}
v2 = services.update_agent(agent, spec=spec).current_version
skipped = verdict("skipped", evaluator="trajectory", detail="The case expects no tool calls.")
after = eval_run(v2, dataset,
                 {"add two numbers": ["failed", "failed"], "subtract": ["passed", "passed"],
                  "multiply a long list of numbers": ["passed", "passed"],
                  "divide by zero": ["error", "error"], MARKUP: ["passed", "running"]},
                 session=session, status="running",
                 verdicts={"add two numbers": [judge, verdict("passed", evaluator="regex"),
                                               skipped]})
print(json.dumps([str(before.pk), str(after.pk), str(session.pk)]))
"""


@pytest.fixture(scope="module")
def evals(pages_server: DaphneServer, api: Api) -> dict[str, str]:
    code = ARRANGE.replace("MARKUP", repr(MARKUP))
    out = pages_server.manage("shell", "-c", code).stdout.strip().splitlines()[-1]
    before, after, session = json.loads(out)
    return {"before": before, "after": after, "session": session}


def look(
    browser: Browser, pages_server: DaphneServer, signed_in: dict[str, Any], path: str, name: str
) -> list[str]:
    """``path`` in light and dark at a phone's, a tablet's and a laptop's width
    (page_checks: no console error, CSP violation, failed request or sideways scroll),
    saved as var/screenshots/every-page/evals-<scheme>-<width>/<name>.png."""
    problems = []
    for scheme in ("light", "dark"):
        context = browser.new_context(
            base_url=pages_server.url,
            storage_state=signed_in,  # type: ignore[arg-type]
            color_scheme=scheme,  # type: ignore[arg-type]
        )
        problems += look_at(context, pages_server.url, Visit(path, name), f"evals-{scheme}")
        context.close()
    return problems


def test_the_eval_pages_read_well_at_a_laptops_and_a_phones_width(
    browser: Browser, pages_server: DaphneServer, signed_in: dict[str, Any], evals: dict[str, str]
) -> None:
    pages = {
        "list": "/evals/",
        "new": "/evals/new/",
        "run": f"/evals/{evals['after']}/",
        "compare": f"/evals/compare/?a={evals['before']}&b={evals['after']}",
    }
    problems = [
        problem
        for name, path in pages.items()
        for problem in look(browser, pages_server, signed_in, path, name)
    ]
    assert problems == [], "\n".join(problems)


def test_an_eval_runs_page_shows_verdicts_as_text_and_opens_a_cases_session(
    page: Page, evals: dict[str, str]
) -> None:
    page.goto(f"/evals/{evals['after']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "eval-run")
    expect(page.get_by_test_id("eval-count")).to_have_text("9 of 10 finished")
    cases = page.get_by_test_id("case")
    expect(cases).to_have_count(5)
    expect(cases.nth(4).get_by_test_id("case-name")).to_have_text(MARKUP)  # text, not markup
    first = cases.first
    expect(first.get_by_test_id("case-rate")).to_have_text("0/2 passed")
    judge = first.locator("details.verdict.failed").first
    judge.locator("summary").first.click()
    judge.locator(".judge-prompt summary").click()
    expect(judge.locator(".judge-prompt pre")).to_contain_text("Case: " + MARKUP)
    assert page.locator("b", has_text="bold").count() == 0
    expect(page.locator("#cancel-eval")).to_be_visible()  # running
    first.get_by_test_id("case-session").first.click()
    page.wait_for_url(f"**/sessions/{evals['session']}/")


def test_compare_shows_the_regression_first_and_links_both_sessions(
    page: Page, evals: dict[str, str]
) -> None:
    page.goto(f"/evals/{evals['after']}/")
    page.get_by_test_id("compare-previous").click()
    page.wait_for_url("**/evals/compare/?a=*")
    groups = page.locator("[data-testid^=group-]")
    expect(groups.first).to_have_attribute("data-testid", "group-regressions")
    regression = page.get_by_test_id("group-regressions").get_by_test_id("compare-case")
    expect(regression).to_have_count(1)
    expect(regression.first).to_have_attribute("data-case", "add two numbers")
    # subtract (1/2 -> 2/2) and the markup case (1/2 -> 1/1, one repeat still running)
    improved = page.get_by_test_id("group-improvements").get_by_test_id("compare-case")
    expect(improved).to_have_count(2)
    expect(page.locator(".eval-charts .uplot")).to_have_count(3)
