"""Hostile text everywhere, in a real browser: 105 XSS payloads as model output (text and
thinking), tool output (tool results and errors, tool names and arguments), agent names
(in the builder's tree and form) and descriptions, session titles and model names;
rendered live and after a reload. Nothing may run: a ``window`` sentinel stays unset, no
dialog opens, and no element a payload would create (they all carry ``data-xss``)
exists. Each payload must also be readable on the page, as text."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import BrowserContext, Dialog, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api

RUN = "window.__xss=(window.__xss||0)+1"
CALLS = [RUN, "alert(1)", "confirm(document.domain)"]
TEMPLATES = [
    "<script data-xss>{x}</script>",
    '<img data-xss src=x onerror="{x}">',
    '<svg data-xss onload="{x}">',
    '"><img data-xss src=x onerror={x}>',
    "'><svg data-xss/onload={x}>",
    '<iframe data-xss srcdoc="<script>parent.{x}</script>"></iframe>',
    '<a data-xss href="javascript:{x}">click me</a>',
    "javascript:{x}",
    "<body data-xss onload={x}>",
    '<details data-xss open ontoggle="{x}">',
    '<input data-xss autofocus onfocus="{x}">',
    '<video data-xss><source onerror="{x}"></video>',
    '<math data-xss><mtext><table><mglyph><style><img src=x onerror="{x}">',
    "</textarea><script data-xss>{x}</script>",
    "</script><script data-xss>{x}</script>",
    '<object data-xss data="javascript:{x}"></object>',
    '<embed data-xss src="javascript:{x}">',
    '<marquee data-xss onstart="{x}">',
    '<div data-xss style="background:url(javascript:{x})">',
    "{{{{constructor.constructor('{x}')()}}}}",
    "${{{x}}}",
    '<template data-xss><img src=x onerror="{x}"></template>',
    '<noscript><p title="</noscript><img data-xss src=x onerror={x}>">',
    'http://example.com/"><img data-xss src=x onerror={x}>',
    "https://x.test/?q=<script data-xss>{x}</script>",
    '<base data-xss href="javascript:/">{x}',
    '<form data-xss><button formaction="javascript:{x}">x</button></form>',
    '<link data-xss rel=import href="data:text/html,<script>{x}</script>">',
    '<meta data-xss http-equiv="refresh" content="0;url=javascript:{x}">',
    '<svg><animate data-xss onbegin="{x}" attributeName=x dur=1s>',
    "<style data-xss>@import 'javascript:{x}';</style>",
    '<xss data-xss onpointerover="{x}">hover me',
    '<img data-xss src="data:image/svg+xml,<svg onload={x}>">',
    '<a data-xss href="&#106;avascript:{x}">entity</a>',
    "<scr<script>ipt data-xss>{x}</scr</script>ipt>",
]
PAYLOADS = [t.format(x=x) for x in CALLS for t in TEMPLATES]
assert len(set(PAYLOADS)) >= 100

INJECTED = '[data-xss], iframe, object, embed, script:not([src]):not([type="application/json"])'
NO_SCRIPT_RAN = f"""() => ({{
  sentinel: window.__xss ?? null,
  injected: document.querySelectorAll('{INJECTED}').length,
}})"""


def script_of(payloads: list[str]) -> list[dict[str, Any]]:
    """A scripted model turn per payload: it says it, thinks it, and calls either the
    calculator with it (whose error quotes it back) or a tool named after it (whose
    "unknown tool" error names it): every payload comes back as tool output."""
    steps = [
        {
            "text": payload,
            "thinking": payload,
            "tool_calls": [
                {"name": "calculator", "args": {"expression": payload}}
                if index % 2
                else {"name": payload, "args": {"note": payload}}
            ],
        }
        for index, payload in enumerate(payloads)
    ]
    return [*steps, {"text": "all payloads sent"}]


def assert_inert(page: Page, dialogs: list[str]) -> None:
    assert page.evaluate(NO_SCRIPT_RAN) == {"sentinel": None, "injected": 0}
    assert dialogs == []


def assert_shows(page: Page, selector: str, payloads: list[str]) -> None:
    """Every payload is in ``selector``'s text nodes (so it is text, not markup)."""
    text = page.locator(selector).first.text_content() or ""
    missing = [p for p in payloads if p not in text]
    where = f"{page.url} {selector}"
    assert missing == [], f"{where}: {len(missing)} payloads not shown, e.g. {missing[:2]}"


def watch_dialogs(context: BrowserContext) -> list[str]:
    opened: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        opened.append(dialog.message)
        dialog.dismiss()

    context.on("page", lambda page: page.on("dialog", on_dialog))
    return opened


def test_payloads_in_model_and_tool_output_render_as_text_live_and_after_reload(
    context: BrowserContext, api: Api
) -> None:
    dialogs = watch_dialogs(context)
    api.model("hostile", script=script_of(PAYLOADS), loop=False)
    agent = api.agent(
        {
            "name": "hostile_agent",
            "model": "hostile",
            "instruction": "Say what the script says.",
            "tools": [{"name": "calculator"}],
            "max_iterations": len(PAYLOADS) + 5,
            "limits": {"max_steps": 400, "max_model_calls": 400, "max_tool_calls": 1000},
        },
        description="\n".join(PAYLOADS),
    )
    session = api.post("/api/sessions/", {"agent": agent["id"], "title": PAYLOADS[0]})
    timeline = context.new_page()
    timeline.goto(f"/sessions/{session['id']}/")
    expect(timeline.locator("#conn")).to_have_attribute("data-state", "live")
    chat = context.new_page()
    chat.goto(f"/playground/?session={session['id']}")
    expect(chat.locator("body")).to_have_attribute("data-ready", "playground")
    chat.fill("#message", PAYLOADS[1])
    chat.keyboard.press("Enter")

    for page in (chat, timeline):
        expect(page.get_by_text("all payloads sent")).to_be_visible(timeout=60_000)
        assert_inert(page, dialogs)
    assert_shows(timeline, "#timeline", PAYLOADS)  # live: every event arrived over the socket
    assert_shows(chat, "#transcript", PAYLOADS)

    for page in (chat, timeline):
        page.reload()
        expect(page.get_by_text("all payloads sent")).to_be_visible()
    earlier = timeline.locator("#load-earlier")
    if earlier.is_visible():  # a page of the newest events comes first
        earlier.click()
        expect(earlier).to_be_hidden()
    expect(timeline.locator("[data-seq='1']")).to_be_attached()
    for page in (chat, timeline):
        assert_inert(page, dialogs)
    assert_shows(timeline, "#timeline", PAYLOADS)
    timeline.locator(".tool.is-error").first.locator("summary").click()
    expect(timeline.locator(".tool.is-error").first).to_contain_text(PAYLOADS[0])
    assert_shows(timeline, "h1", [PAYLOADS[0]])
    assert_inert(timeline, dialogs)


def test_payloads_as_names_titles_and_descriptions_render_as_text_on_every_page(
    context: BrowserContext, api: Api
) -> None:
    dialogs = watch_dialogs(context)
    for index, payload in enumerate(PAYLOADS[:12]):
        api.post("/api/models/", {"name": payload[:100], "provider": "scripted"})
        api.post("/api/sessions/", {"agent": _any_agent(api), "title": f"{index} {payload}"})
    page = context.new_page()
    for path in ("/", "/agents/", "/sessions/", "/models/", "/playground/"):
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
        assert_inert(page, dialogs)
    page.goto("/sessions/")
    assert_shows(page, "main", [f"11 {PAYLOADS[11]}"])
    page.goto("/models/")
    assert_shows(page, "main", [p[:100] for p in PAYLOADS[:12]])

    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    spec = {
        "name": PAYLOADS[0],
        "model": "scripted",
        "sub_agents": [{"name": p, "model": "scripted"} for p in PAYLOADS],
    }
    editor = page.locator("#json-editor")
    editor.fill(json.dumps(spec))
    editor.blur()
    expect(page.locator("#tree li")).to_have_count(len(PAYLOADS) * 2 + 2)
    page.click("#problems-count")  # the names break the name rule: their problems list
    expect(page.locator("#problems li").first).to_be_visible()
    assert_shows(page, "#tree", PAYLOADS)
    assert_shows(page, "#agent-title", [PAYLOADS[0]])
    page.locator("#tree button.node").nth(3).click()
    expect(page.locator("#f-sub_agents-2-name")).to_have_value(PAYLOADS[2])
    page.click("#save")
    expect(page.locator(".toast.error")).to_contain_text("Not saved")
    assert_inert(page, dialogs)


def _any_agent(api: Api) -> str:
    return str(api.get("/api/agents/")["results"][0]["id"])
