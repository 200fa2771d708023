"""The eval pages in Chromium: the list, the New eval form, an eval run's page with its
verdicts (a judge's prompt behind <details>), a case's session one click away, and the
comparison of two evals with the regression first, at a laptop's and a phone's width
in light and dark. Screenshots: var/screenshots/evals/."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
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
                  "divide by zero": ["error", "error"], MARKUP: ["failed", "passed"]},
                 session=session,
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
    """``path`` in light and dark at a phone's, a tablet's, a laptop's and a desktop's width
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
    expect(page.get_by_test_id("eval-count")).to_have_text("10 of 10 finished")
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
    expect(page.locator("#cancel-eval")).to_be_hidden()  # it has ended
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
    improved = page.get_by_test_id("group-improvements").get_by_test_id("compare-case")
    expect(improved).to_have_count(1)
    expect(improved.first).to_have_attribute("data-case", "subtract")
    expect(page.locator(".eval-charts .uplot")).to_have_count(3)


# The whole way through, as a person would: a dataset, an eval started from the form and
# watched as it fills in, a case's session, a second version's eval, the regression.

FLOW = """
import json
from studio import services
from studio.models import ModelConfig
from django.contrib.auth.models import User
from tests.support.eval_runs import case, make_dataset
demo = User.objects.get(username="demo")
for name, reply in (("echo_v1", "You said: {last_user_message}"),
                    ("echo_v2", "Answer: {last_user_message}")):
    ModelConfig.objects.create(owner=demo, name=name, provider="scripted",
                               options={"script": [{"text": reply}], "loop": True,
                                        "latency_s": 0.4})
spec = {"name": "parrot", "model": "echo_v1", "instruction": "Repeat what you hear."}
agent = services.create_agent(demo, name="parrot", spec=spec)
services.update_agent(agent, spec={**spec, "model": "echo_v2"}, note="a new model")
make_dataset(demo, "parroting", [
    case("greeting", "hello", expect="hello"),
    case("a name", "I am Ada", expect="Ada"),
    case("says it was said", "repeat after me", expect="You said"),
    case("does sums", "2 + 2", expect="4"),
])
print(json.dumps("ok"))
"""
FLOW_CASES = 4


def start_eval(page: Page, version: str) -> str:
    """Start an eval of ``version`` on ``parroting`` from the New eval form, judged by
    "contains" (the case's expected answer), one case at a time; its page's path."""
    page.goto("/evals/")
    page.get_by_test_id("new-eval").click()
    expect(page.locator("body")).to_have_attribute("data-ready", "eval-new")
    option = page.locator("#agent_version option", has_text=version)  # "parrot@2 · its note"
    page.select_option("#agent_version", value=option.get_attribute("value"))
    dataset = page.locator("#dataset_version option", has_text="parroting@1")
    page.select_option("#dataset_version", value=dataset.get_attribute("value"))
    # Ticked at first: contains, trajectory, limits and state (the API's defaults).
    ticked = page.locator('input[name="use"]:checked')
    expect(ticked).to_have_count(4)
    while ticked.count():
        ticked.first.uncheck()
    expect(page.locator("#contains-text")).to_be_hidden()  # its fields show when ticked
    page.locator('[data-kind="contains"] input[name="use"]').check()
    expect(page.locator("#contains-text")).to_be_visible()
    page.fill("#concurrency", "1")
    page.click("#start-eval")
    page.wait_for_url(re.compile(r"/evals/[0-9a-f-]{36}/$"))
    return page.url


def watch_it_fill(page: Page) -> list[int]:
    """The progress bar's values as they change, until the eval has ended."""
    seen: list[int] = []
    status = page.locator("#eval-status")
    deadline = time.monotonic() + 60
    while status.text_content() in ("queued", "running"):
        value = int(page.locator("#eval-progress").evaluate("bar => bar.value"))
        if not seen or seen[-1] != value:
            seen.append(value)
        assert time.monotonic() < deadline, f"the eval did not end: {seen}"
        page.wait_for_timeout(50)
    seen.append(int(page.locator("#eval-progress").evaluate("bar => bar.value")))
    return seen


def test_an_eval_from_the_form_fills_in_live_and_a_new_version_shows_its_regression(
    page: Page, pages_server: DaphneServer
) -> None:
    pages_server.manage("shell", "-c", FLOW)
    first = start_eval(page, "parrot@1")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    seen = watch_it_fill(page)
    # Live: the page saw cases finish one by one (not one reload at the end).
    assert seen[-1] == FLOW_CASES and len(set(seen)) >= 3, seen
    expect(page.locator("#eval-status")).to_have_text("finished")
    expect(page.locator("#eval-status")).to_have_class("badge")  # not green: 75% passed
    expect(page.get_by_test_id("eval-count")).to_have_text(f"{FLOW_CASES} of {FLOW_CASES} finished")
    expect(page.get_by_test_id("case")).to_have_count(FLOW_CASES)
    expect(page.get_by_test_id("pass-rate")).to_have_text("75%")
    expect(page.locator("#cancel-eval")).to_be_hidden()
    statuses = page.get_by_test_id("case-status").all_text_contents()
    assert statuses == ["passed", "passed", "passed", "failed"]
    expect(page.get_by_test_id("verdict").last).to_contain_text("contains failed")
    screenshot(page, "evals/run-ended", full_page=True)

    # A case is a real session: its timeline shows what the agent said.
    page.get_by_test_id("case").first.get_by_test_id("case-session").click()
    page.wait_for_url(re.compile(r"/sessions/[0-9a-f-]{36}/$"))
    expect(page.locator("#timeline")).to_contain_text("You said: hello")

    second = start_eval(page, "parrot@2")
    assert second != first
    watch_it_fill(page)
    expect(page.get_by_test_id("pass-rate")).to_have_text("50%")
    page.get_by_test_id("compare-previous").click()
    page.wait_for_url(re.compile(r"/evals/compare/\?a="))
    groups = page.locator("[data-testid^=group-]")
    expect(groups.first).to_have_attribute("data-testid", "group-regressions")
    regression = page.get_by_test_id("group-regressions").get_by_test_id("compare-case")
    expect(regression).to_have_count(1)
    expect(regression.first).to_have_attribute("data-case", "says it was said")
    expect(regression.first.get_by_test_id("diff")).to_be_visible()
    expect(page.get_by_test_id("group-unchanged").get_by_test_id("compare-case")).to_have_count(3)
    # Pass rate and latency per version; the scripted models have no price: said so.
    expect(page.locator(".eval-charts .uplot")).to_have_count(2)
    expect(page.locator(".eval-charts .chart-none")).to_contain_text("no price")
    screenshot(page, "evals/compare-flow", full_page=True)
    # The two sessions' runs, step by step, on the run compare page.
    regression.first.get_by_test_id("diff").click()
    page.wait_for_url(re.compile(r"/compare/\?a="))
    expect(page.get_by_test_id("compare-summary")).to_be_visible()

    # A running eval can be cancelled from its page: the cases not yet judged stop.
    start_eval(page, "parrot@1")
    expect(page.locator("#eval-progress")).to_have_js_property("value", 1)
    page.click("#cancel-eval")
    page.get_by_role("dialog").get_by_role("button", name="Cancel eval").click()
    expect(page.locator("#eval-status")).to_have_text("cancelled")
    expect(page.locator("#cancel-eval")).to_be_hidden()
    expect(page.locator("#conn")).to_have_text("Finished")
    statuses = page.get_by_test_id("case-status").all_text_contents()
    assert statuses[0] == "passed" and "cancelled" in statuses, statuses


def test_the_new_eval_form_opens_each_ticked_evaluators_fields_and_shows_the_apis_error(
    page: Page, evals: dict[str, str]
) -> None:
    page.goto("/evals/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "eval-new")
    expect(page.locator("#judge-rubric")).to_be_hidden()
    for kind in ("regex", "judge", "custom"):
        page.locator(f'[data-kind="{kind}"] input[name="use"]').first.check()
    expect(page.locator("#judge-rubric")).to_be_visible()
    page.fill("#judge-rubric", "Is the sum right?")
    page.fill("#regex-pattern", "(unclosed")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        screenshot(page, f"evals/new-ticked-{width}", full_page=True)
    page.click("#start-eval")
    # The eval API refuses the pattern: the form says which evaluator and why; no eval.
    expect(page.locator("#form-error")).to_contain_text("evaluators")
    expect(page.locator("#form-error")).to_contain_text("regex")
    assert page.url.endswith("/evals/new/")
    # A custom evaluator's parameters are checked before any case runs; the form says
    # which ticked evaluator is wrong, in its name, and lists what it takes.
    words = page.locator('[data-kind="custom"][data-name="max_words"]')
    expect(words.get_by_test_id("params")).to_contain_text("max (required)")
    page.fill("#regex-pattern", "[0-9]+")
    page.click("#start-eval")
    expect(page.locator("#form-error")).to_contain_text("max_words, params.max: Field required")
    assert page.url.endswith("/evals/new/")
