"""Static checks on the code that renders event, agent and tool data: nothing marks it
safe or writes it as HTML. format_html (which escapes its arguments) is the one way
Python code may build markup; the pages' scripts build DOM nodes, never HTML strings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *sorted((ROOT / "templates").rglob("*.html")),
    *sorted((ROOT / "static/studio").rglob("*.js")),
    *sorted((ROOT / "studio").rglob("*.py")),
]
FORBIDDEN = {
    "mark_safe": re.compile(r"\bmark_safe\s*\("),
    "|safe filter": re.compile(r"\|\s*safe\b"),
    "{% autoescape off %}": re.compile(r"{%\s*autoescape\s+off"),
    "SafeString(...)": re.compile(r"\bSafeString\s*\("),
    "innerHTML/outerHTML assignment": re.compile(r"\.(?:inner|outer)HTML\s*\+?="),
    "insertAdjacentHTML": re.compile(r"\binsertAdjacentHTML\s*\("),
    "document.write": re.compile(r"\bdocument\.write(?:ln)?\s*\("),
    "eval / new Function": re.compile(r"(?<![\w.])(?:eval|Function)\s*\("),
}


def test_the_checked_sources_exist() -> None:
    names = {path.suffix for path in SOURCES}
    assert names == {".html", ".js", ".py"}
    assert len(SOURCES) > 40


@pytest.mark.parametrize("rule", sorted(FORBIDDEN))
def test_no_source_bypasses_escaping(rule: str) -> None:
    pattern = FORBIDDEN[rule]
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SOURCES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_the_checks_catch_what_they_look_for() -> None:
    samples = {
        "mark_safe": "return mark_safe(event.text)",
        "|safe filter": "{{ event.text|safe }}",
        "{% autoescape off %}": "{% autoescape off %}{{ x }}",
        "SafeString(...)": "SafeString(tool.output)",
        "innerHTML/outerHTML assignment": "row.innerHTML = event.text;",
        "insertAdjacentHTML": "list.insertAdjacentHTML('beforeend', html)",
        "document.write": "document.write(text)",
        "eval / new Function": "new Function(body)",
    }
    for rule, sample in samples.items():
        assert FORBIDDEN[rule].search(sample), rule
