"""Policies: prioritised rules on an agent's model calls, tool calls and sub-agent calls.

A rule names what it applies to (``target``: ``model``, ``tool`` or ``agent``; a
sub-agent call is a call of an agent used as a tool, or a transfer), which of those by
name (``match``, a shell-style pattern), and conditions on the call's arguments
(``when``, all of which must hold). The first matching rule, highest ``priority`` first
and in the order given among equals, decides:

- ``allow``: the call goes ahead;
- ``deny``: a tool or sub-agent call gets an error result the model reads ("denied by
  policy ..."); a model call ends the agent's turn with ``PolicyDeniedError``, which its
  failure policy then handles;
- ``rewrite``: the call goes ahead with ``set`` merged into its arguments;
- ``ask``: a person approves, edits or denies the call first (``agents_core.approvals``).

A call no rule matches goes ahead. Every decision a rule makes is recorded as a
``policy_decision`` event. The per-tool approval flag of a spec is one such rule
(``approval_rules``). Rules are data, so a browser can write them and never sends code.

Model calls are matched by the model's provider key; their arguments are
``prompt_tokens`` (estimated), ``messages``, ``tools`` (names) and ``model_calls`` (made
so far this turn). A tool call's arguments are the model's; a sub-agent call's are the
agent tool's (``request``) or the transfer's (``agent_name``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from agents_core.contracts import Contract

PolicyTarget = Literal["model", "tool", "agent"]
Operator = Literal[
    "eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "contains", "starts_with",
    "not_starts_with", "matches", "exists", "missing",
]  # fmt: skip
RULE_NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
RULE_NAME_RULE = "Use 1–64 letters, digits, _, -, . or :."  # noqa: RUF001 (a range, as prose)
OPERATOR_WORDS: dict[str, str] = {
    "eq": "equals", "ne": "differs from", "gt": "greater than", "ge": "at least",
    "lt": "less than", "le": "at most", "in": "is one of", "not_in": "is none of",
    "contains": "contains", "starts_with": "starts with", "not_starts_with":
    "does not start with", "matches": "matches", "exists": "is given", "missing": "is not given",
}  # fmt: skip
"""Each operator in words, as the builder shows it and errors say it."""
MAX_RULES = 64
MAX_CONDITIONS = 16
_MISSING = object()


class PolicyAction(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REWRITE = "rewrite"
    ASK = "ask"


class Condition(Contract):
    """One test of a call's arguments: the value at ``arg`` (a dotted path into the
    arguments, e.g. ``payment.amount``) compared by ``op`` with ``value``."""

    arg: str = Field(min_length=1, max_length=200)
    op: Operator
    value: Any = None

    @field_validator("value")
    @classmethod
    def _value_fits_the_operator(cls, value: Any, info: ValidationInfo) -> Any:
        """Told at the value's own field, in words, before any call is tested."""
        op = info.data.get("op")
        if op in ("gt", "ge", "lt", "le") and not _is_number(value):
            raise ValueError(f"{OPERATOR_WORDS[op]} compares with a number")
        if op in ("in", "not_in") and not isinstance(value, list):
            raise ValueError(f'{OPERATOR_WORDS[op]} takes a list of values, e.g. ["a", "b"]')
        if op in ("starts_with", "not_starts_with", "matches", "contains") and not isinstance(
            value, str
        ):
            raise ValueError(f"{OPERATOR_WORDS[op]} takes a text value")
        if op == "matches":
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value

    def holds(self, args: Mapping[str, Any]) -> bool:
        found = _lookup(args, self.arg)
        if self.op == "exists":
            return found is not _MISSING
        if self.op == "missing":
            return found is _MISSING
        return found is not _MISSING and _compare(self.op, found, self.value)


class PolicyRule(Contract):
    """One rule; see the module docstring for how rules decide."""

    name: str = Field(pattern=RULE_NAME_PATTERN)
    target: PolicyTarget = "tool"
    match: str = Field(default="*", min_length=1, max_length=128)
    """A shell-style pattern (``*``, ``?``, ``[abc]``) on the tool's, agent's or model's
    name."""
    when: list[Condition] = Field(default_factory=list, max_length=MAX_CONDITIONS)
    action: PolicyAction
    priority: int = Field(default=0, ge=-1_000, le=1_000)
    reason: str = Field(default="", max_length=500)
    """Said to the model on a denial, and stored with every decision."""
    set: dict[str, Any] | None = Field(default=None, validate_default=True)
    """With ``rewrite``: the arguments to set (merged over the model's)."""
    timeout_s: float | None = Field(default=None, gt=0, le=30 * 86_400)
    """With ``ask``: how long the call waits for a person (else the tool's or agent's)."""
    on_timeout: Literal["approve", "deny"] | None = Field(default=None, validate_default=True)
    """With ``ask``: what decides the call when nobody did in time."""

    @field_validator("action")
    @classmethod
    def _action_fits_the_target(cls, action: PolicyAction, info: ValidationInfo) -> PolicyAction:
        if info.data.get("target") == "model" and action in (
            PolicyAction.REWRITE,
            PolicyAction.ASK,
        ):
            raise ValueError("a model call can only be allowed or denied")
        return action

    @field_validator("set")
    @classmethod
    def _set_goes_with_rewrite(
        cls, value: dict[str, Any] | None, info: ValidationInfo
    ) -> dict[str, Any] | None:
        rewrite = info.data.get("action") is PolicyAction.REWRITE
        if rewrite and not value:
            raise ValueError('a rewrite rule needs the arguments to set, e.g. {"amount": 100}')
        if not rewrite and value is not None:
            raise ValueError("only a rewrite rule sets arguments")
        return value

    @field_validator("on_timeout")
    @classmethod
    def _timeouts_go_with_ask(cls, value: str | None, info: ValidationInfo) -> str | None:
        asks = info.data.get("action") is PolicyAction.ASK
        if not asks and (value is not None or info.data.get("timeout_s") is not None):
            raise ValueError("only an ask rule has a time-out")
        return value

    def applies(self, target: PolicyTarget, name: str, args: Mapping[str, Any]) -> bool:
        return (
            self.target == target
            and fnmatch.fnmatchcase(name, self.match)
            and all(c.holds(args) for c in self.when)
        )


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """What the first matching rule decided about one call."""

    rule: PolicyRule
    target: PolicyTarget
    subject: str
    args: dict[str, Any]
    """The arguments the rule saw."""

    @property
    def action(self) -> PolicyAction:
        return self.rule.action

    @property
    def rewritten(self) -> dict[str, Any] | None:
        """With ``rewrite``: the arguments the call goes ahead with."""
        if self.rule.set is None:
            return None
        return {**self.args, **self.rule.set}

    def refusal(self) -> str:
        """What the model reads when a call is denied."""
        reason = self.rule.reason
        said = f"denied by policy {self.rule.name!r}" + (f": {reason}" if reason else "")
        stop = "" if said.endswith((".", "!", "?")) else "."  # a reason written as a sentence
        return f"{said}{stop} The call did not run."


@dataclass(frozen=True, slots=True)
class PolicyEngine:
    """An agent's rules, in the order they are tried."""

    rules: tuple[PolicyRule, ...] = ()

    @classmethod
    def of(cls, rules: Iterable[PolicyRule]) -> PolicyEngine:
        # sorted() is stable: among equal priorities, the order given.
        return cls(tuple(sorted(rules, key=lambda rule: -rule.priority)))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def decide(
        self, target: PolicyTarget, name: str, args: Mapping[str, Any]
    ) -> PolicyVerdict | None:
        """The first rule that applies to this call, or ``None`` (it goes ahead)."""
        for rule in self.rules:
            if rule.applies(target, name, args):
                return PolicyVerdict(rule, target, name, dict(args))
        return None


NO_POLICY = PolicyEngine()

APPROVAL_RULE = "requires_approval"


def approval_rules(tools: Iterable[str]) -> list[PolicyRule]:
    """The per-tool approval flag as rules: every call of these tools asks a person.
    Priority -1000, so any rule written for the same tool decides first."""
    return [
        PolicyRule(
            name=APPROVAL_RULE, target="tool", match=_literal(tool), action="ask", priority=-1_000
        )
        for tool in sorted(tools)
    ]


def _literal(name: str) -> str:
    """A pattern matching exactly ``name`` (its wildcard characters escaped)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _lookup(args: Mapping[str, Any], path: str) -> Any:
    node: Any = args
    for key in path.split("."):
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, Sequence) and not isinstance(node, str) and key.isdigit():
            index = int(key)
            if index >= len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(op: Operator, found: Any, value: Any) -> bool:
    match op:
        case "eq":
            return bool(found == value)
        case "ne":
            return bool(found != value)
        case "gt" | "ge" | "lt" | "le":
            return _is_number(found) and _ordered(op, float(found), float(value))
        case "in":
            return found in value
        case "not_in":
            return found not in value
        case "contains":
            return isinstance(found, str | list) and value in found
        case "starts_with":
            return isinstance(found, str) and found.startswith(value)
        case "not_starts_with":
            return isinstance(found, str) and not found.startswith(value)
        case "matches":
            return isinstance(found, str) and re.search(value, found) is not None
    return False


def _ordered(op: str, left: float, right: float) -> bool:
    return {"gt": left > right, "ge": left >= right, "lt": left < right, "le": left <= right}[op]
