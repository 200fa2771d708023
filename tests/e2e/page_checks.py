"""Looking at a page the way a visitor does, on a phone, a tablet, a laptop and a
desktop, and writing down everything wrong with it: a script error or any other console
error, a Content-Security-Policy violation, a request that failed or answered an error
status (other than the page's own expected one), a page wider than the window (it would
scroll sideways), text sticking out of the box it is in (past a card's edge), and in a
laptop's or a desktop's window a box that scrolls sideways or a table cell's one word
broken over two lines. Each visit opens a fresh tab in the given context, so nothing the
previous page left in flight (an aborted request, a socket) is blamed on the next one; it
loads once, in the phone's window, and is then widened to the tablet's, the laptop's and
the desktop's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import (
    BrowserContext,
    ConsoleMessage,
    Page,
    Request,
    Response,
    ViewportSize,
    expect,
)

from tests.e2e.browser import SAVE_SCREENSHOTS, SCREENSHOTS

# Runs in every document before its own scripts (Playwright injects it; the page's CSP
# does not apply to it): the browser's own report of what the policy blocked.
CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const what = `${e.effectiveDirective} blocked ${e.blockedURI || "inline"}`;
  window.__cspViolations.push(`${what} at ${e.sourceFile}:${e.lineNumber}`);
});
"""

_DESCRIBE = """
const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
  + [...el.classList].map((c) => "." + c).join("");
"""

# What sticks out past the window: the innermost elements reaching past its right edge
# that no scrolling ancestor contains. Answers null when the page fits.
OVERFLOW = (
    "() => {"
    + _DESCRIBE
    + """
  const doc = document.documentElement;
  const width = doc.clientWidth;
  if (doc.scrollWidth <= width) return null;
  // Inside a box that scrolls or clips, unless positioned out of it (an absolutely
  // positioned element escapes the overflow of ancestors it is not positioned in).
  const scrolls = (el) => {
    if (/absolute|fixed/.test(getComputedStyle(el).position)) return false;
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible") return true;
    }
    return false;
  };
  const right = (el) => Math.round(el.getBoundingClientRect().right);
  const wide = [...document.body.querySelectorAll("*")].filter(
    (el) => right(el) > width && !scrolls(el)
  );
  const innermost = wide.filter((el) => !wide.some((other) => other !== el && el.contains(other)));
  const culprits = innermost.slice(0, 6).map(
    (el) => `${describe(el.parentElement)} > ${describe(el)} (right edge ${right(el)})`
  );
  return { scrollWidth: doc.scrollWidth, width, culprits };
}"""
)

# Boxes that scroll sideways inside the page (a table wider than its card), for a
# window wide enough that nothing should (form fields excepted).
SCROLLING_BOXES = (
    "() => {"
    + _DESCRIBE
    + """
  const field = (el) => ["TEXTAREA", "SELECT"].includes(el.tagName) || el.clientWidth <= 40;
  const scrolling = (el) => /auto|scroll/.test(getComputedStyle(el).overflowX)
    && el.scrollWidth > el.clientWidth + 1;
  return [...document.body.querySelectorAll("*")]
    .filter((el) => !field(el) && scrolling(el))
    .slice(0, 6)
    .map((el) => `${describe(el)} (${el.scrollWidth}px in ${el.clientWidth}px)`);
}"""
)

# Text sticking out of its box: the innermost elements with text that reach past the
# left or right edge of the nearest ancestor that clips them (overflow hidden or clip)
# or draws its edge (a card's border), where no box that scrolls lies between: a row
# of chips wider than its card on a phone. Boxes that end their text in an ellipsis
# clip on purpose, and what is positioned or hidden is not looked at.
STICKING_OUT = (
    "() => {"
    + _DESCRIBE
    + """
  // What each ancestor is to what it holds, read once: a box that scrolls (or clips
  // into an ellipsis: nothing inside is looked at), a box with edges, or neither.
  const kinds = new Map();
  const kindOf = (p) => {
    if (!kinds.has(p)) {
      const style = getComputedStyle(p);
      const clips = /hidden|clip/.test(style.overflowX);
      const edged = parseFloat(style.borderRightWidth) > 0 && parseFloat(style.borderLeftWidth) > 0;
      const ellipsis = clips && style.textOverflow === "ellipsis";
      const scrolls = /auto|scroll/.test(style.overflowX) || ellipsis;
      kinds.set(p, scrolls ? "scrolls" : clips || edged ? "box" : null);
    }
    return kinds.get(p);
  };
  const boxOf = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const kind = kindOf(p);
      if (kind) return kind === "box" ? p : null;
    }
    return null;
  };
  const out = [...document.body.querySelectorAll("*")].filter((el) => {
    const rect = el.getBoundingClientRect();
    if (!rect.width) return false;
    const box = boxOf(el);
    if (!box) return false;
    const edge = box.getBoundingClientRect();
    if (edge.width < 2 || edge.height < 2) return false;  // a visually hidden label
    if (rect.right <= edge.right + 1 && rect.left >= edge.left - 1) return false;
    const style = getComputedStyle(el);
    if (/absolute|fixed/.test(style.position) || style.visibility !== "visible") return false;
    return el.textContent.trim() !== "";
  });
  return out
    .filter((el) => !out.some((other) => other !== el && el.contains(other)))
    .slice(0, 6)
    .map((el) => {
      const text = el.textContent.trim().slice(0, 30);
      return `${describe(el.parentElement)} > ${describe(el)} "${text}"`;
    });
}"""
)

# A table cell of one short word (a status, a cost, an id, a column's name) broken over
# two lines: "Succee|ded" reads as two things. Long unbroken values (hashes, paths) may
# break. Lines are told apart by their text's boxes: a box that starts below the bottom
# of the line before starts a new one. Visually hidden text is not looked at.
BROKEN_WORDS = (
    "() => {"
    + _DESCRIBE
    + r"""
  const shown = (node) => {  // not in a visually hidden box (a screen reader's label)
    const box = node.parentElement.getBoundingClientRect();
    return box.width > 2 && box.height > 2;
  };
  const lines = (cell) => {
    const boxes = [];
    const texts = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = texts.nextNode(); node; node = texts.nextNode()) {
      if (!node.textContent.trim() || !shown(node)) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      boxes.push(...[...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0));
    }
    boxes.sort((a, b) => a.top - b.top);
    let count = 0, bottom = -Infinity;
    for (const box of boxes) {
      if (box.top >= bottom - 2) count += 1;
      bottom = Math.max(bottom, box.bottom);
    }
    return count;
  };
  return [...document.querySelectorAll("td, th")]
    .filter((cell) => {
      const text = cell.textContent.trim();
      return text && text.length <= 20 && !/\s/.test(text) && lines(cell) > 1;
    })
    .slice(0, 6)
    .map((cell) => `${describe(cell)} "${cell.textContent.trim()}"`);
}"""
)

TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"

WINDOWS: tuple[ViewportSize, ...] = (
    {"width": 390, "height": 844},  # a phone
    {"width": 820, "height": 1180},  # a tablet, upright
    {"width": 1280, "height": 800},  # a laptop
    {"width": 1440, "height": 900},  # a desktop, where rules for wide screens apply
)
WIDE = 1280
"""From this width on no box may scroll sideways either (the admin's run list did,
beside the admin's navigation and filters)."""

PAGE_MODULE = 'script[type="module"][src*="/studio/js/"]:not([src$="/app.js"])'
"""A Studio page's own module: it sets ``body[data-ready]`` once it has drawn the page."""


@dataclass(frozen=True)
class Visit:
    """One page to look at: its path, the name its screenshot is saved under, the
    status its document answers with, and a selector that shows once it has drawn."""

    path: str
    name: str
    status: int = 200
    ready: str | None = None


@dataclass
class PageWatch:
    """Everything wrong seen on one tab while it loads and settles."""

    visit: Visit
    base_url: str
    problems: list[str] = field(default_factory=list)

    def is_own_document(self, url: str) -> bool:
        return url.split("#")[0] == self.base_url + self.visit.path

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        # Chromium reports the expected error status of the document itself here too.
        expected = f"status of {self.visit.status}"
        if expected in message.text and self.is_own_document(message.location.get("url", "")):
            return
        self.problems.append(f"console error: {message.text} ({message.location.get('url')})")

    def on_page_error(self, error: Exception) -> None:
        self.problems.append(f"script error: {error}")

    def on_request_failed(self, request: Request) -> None:
        self.problems.append(f"request failed: {request.url} ({request.failure})")

    def on_response(self, response: Response) -> None:
        # The document's own status (after redirects) is checked where it is loaded.
        if response.request.is_navigation_request() and response.frame.parent_frame is None:
            return
        if response.status >= 400:
            self.problems.append(f"{response.request.method} {response.url}: {response.status}")


def bottoms(page: Page, *selectors: str) -> list[float]:
    """Where the first element of each of ``selectors`` ends, px from the top of the
    window: controls meant to sit on one line end within a pixel of each other."""
    found: list[float] = page.evaluate(
        "sels => sels.map(s => document.querySelector(s).getBoundingClientRect().bottom)",
        list(selectors),
    )
    return found


def look_at(context: BrowserContext, base_url: str, visit: Visit, who: str) -> list[str]:
    """Open ``visit`` in a new tab of ``context`` (served at ``base_url``) in a phone's
    window, wait until it has drawn, look at it there, then in a tablet's, a laptop's
    and a desktop's, and answer what is wrong with it (empty when nothing). Saves a
    full-page screenshot of each as ``var/screenshots/every-page/<who>-<width>/<name>.png``
    (unless ``STUDIO_SCREENSHOTS=0``: a third of the sweep's time goes to them)."""
    page = context.new_page()
    page.set_viewport_size(WINDOWS[0])
    watch = PageWatch(visit, base_url)
    page.add_init_script(CSP_LISTENER)
    page.on("console", watch.on_console)
    page.on("pageerror", watch.on_page_error)
    page.on("requestfailed", watch.on_request_failed)
    page.on("response", watch.on_response)
    try:
        document = page.goto(visit.path)
        if document is None or document.status != visit.status:
            status = document.status if document else "none"
            watch.problems.append(f"answered {status}, expected {visit.status}")
        _wait_until_drawn(page, visit)
        for window in WINDOWS:
            page.set_viewport_size(window)
            watch.problems += _misfits(page, wide=window["width"] >= WIDE)
            _screenshot(page, f"{who}-{window['width']}", visit.name)
        watch.problems += [f"CSP: {v}" for v in page.evaluate("window.__cspViolations || []")]
    finally:
        page.close()
    return [f"{visit.path}: {problem}" for problem in watch.problems]


def _misfits(page: Page, *, wide: bool) -> list[str]:
    """What does not fit the window: the page, and in a wide one any box inside it."""
    found = []
    if overflow := page.evaluate(OVERFLOW):
        found.append(
            f"{overflow['scrollWidth']}px wide in a {overflow['width']}px window: "
            + "; ".join(overflow["culprits"])
        )
    # A chart sizes itself to its box a frame after the window changes: what sticks out
    # is looked at again once two frames have been drawn.
    if page.evaluate(STICKING_OUT):
        page.evaluate(TWO_FRAMES)
        if sticking := page.evaluate(STICKING_OUT):
            found.append("sticks out of its box: " + "; ".join(sticking))
    if wide and (boxes := page.evaluate(SCROLLING_BOXES)):
        width = page.viewport_size["width"] if page.viewport_size else "?"
        found.append(f"scrolls sideways inside a {width}px window: " + "; ".join(boxes))
    if wide and (broken := page.evaluate(BROKEN_WORDS)):
        found.append("a one-word cell broken over lines: " + "; ".join(broken))
    return found


def _wait_until_drawn(page: Page, visit: Visit) -> None:
    page.wait_for_load_state("load")
    if visit.ready:
        expect(page.locator(visit.ready).first).to_be_visible()
    elif page.locator(PAGE_MODULE).count():
        expect(page.locator("body")).to_have_attribute("data-ready", re.compile(r"."))


def _screenshot(page: Page, folder: str, name: str) -> Path:
    path = SCREENSHOTS / "every-page" / folder / f"{name}.png"
    if SAVE_SCREENSHOTS:
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=True)
    return path
