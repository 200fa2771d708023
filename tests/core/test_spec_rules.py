"""What the names in a spec allow, said in words: every pattern of the AgentSpec schema
has its rule, and each rule says what its pattern admits."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agents_core import specs


def patterns(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        found = {schema["pattern"]} if isinstance(schema.get("pattern"), str) else set()
        return found.union(*(patterns(value) for value in schema.values()))
    if isinstance(schema, list):
        return set().union(*(patterns(item) for item in schema))
    return set()


def test_every_pattern_of_the_spec_schema_is_said_in_words() -> None:
    found = patterns(specs.AgentSpec.json_schema())
    assert {specs.NAME_PATTERN, specs.STATE_KEY_PATTERN, specs.PREFIX_PATTERN} <= found
    assert found <= set(specs.PATTERN_RULES)


def test_no_rule_shows_a_regex() -> None:
    for rule in [*specs.PATTERN_RULES.values(), specs.pattern_rule(r"^\d+$")]:
        assert re.search(r"[\^$\[\]{}\\]", rule) is None, rule
        assert rule.endswith(".")


@pytest.mark.parametrize(
    ("pattern", "admitted", "refused"),
    [
        (
            specs.NAME_PATTERN,
            ["a", "_x", "A-b_9", "a" * 64],
            ["", "9a", "-a", "a b", "a.b", "a" * 65],
        ),
        (specs.STATE_KEY_PATTERN, ["a", "_x", "a_9", "a" * 64], ["", "9a", "a-b", "a" * 65]),
        (specs.PREFIX_PATTERN, ["", "9", "docs_", "a-b", "a" * 32], ["a b", "a.", "a" * 33]),
        (specs.SKILL_NAME_PATTERN, ["a", "9", "pdf-forms-2"], ["", "A", "-a", "a-", "a--b", "a_b"]),
    ],
)
def test_each_rule_describes_what_its_pattern_admits(
    pattern: str, admitted: list[str], refused: list[str]
) -> None:
    """The examples follow the words of the rule: a test that the words are true."""
    assert all(re.fullmatch(pattern, value) for value in admitted)
    assert not any(re.fullmatch(pattern, value) for value in refused)
