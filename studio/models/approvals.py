"""The audit trail of approvals: one immutable row per decision on a tool call, whoever
or whatever took it: a person (``studio.services.approvals``), the approval's time-out,
or a policy rule that decided the call without asking anyone (``policy_rows``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models

from agents_core import approvals as core_approvals
from agents_core import events as core_events
from agents_core.tools.control import TRANSFER_TOOL_NAME
from studio.models.runs import Run


class DecisionChannel(models.TextChoices):
    """Through what a decision was taken."""

    PAGE = "page"
    API = "api"
    SOCKET = "socket"
    POLICY = "policy"
    TIMEOUT = "timeout", "time-out"


class ApprovalDecision(models.Model):
    """One decision on one call of one run, never changed once stored.

    At most one per call (``approval_decision_once``): the row is written in the same
    transaction that delivers the decision to the run, so of two people deciding the
    same call at once one stores it and the other gets a conflict, and the tool runs
    at most once."""

    session = models.ForeignKey(
        "studio.Session", on_delete=models.CASCADE, related_name="approval_decisions"
    )
    run = models.ForeignKey("studio.Run", on_delete=models.CASCADE, related_name="+")
    call_id = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)
    decision = models.CharField(max_length=10, choices=[("approve", "approve"), ("deny", "deny")])
    channel = models.CharField(max_length=10, choices=DecisionChannel.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Empty when a policy or a time-out decided.",
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    args_hash = models.CharField(max_length=64, help_text="Of the arguments shown.")
    args_shown = models.JSONField(default=dict)
    args_approved = models.JSONField(
        null=True, blank=True, help_text="What the tool ran with; empty when denied."
    )
    reason = models.TextField(blank=True)
    decided_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "call_id"], name="approval_decision_once")
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.tool} ({self.call_id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise ValueError("an approval decision is never changed once stored")
        super().save(*args, **kwargs)

    @property
    def edited(self) -> bool:
        return self.args_approved is not None and self.args_approved != self.args_shown


POLICY_VERDICTS = {"allow": "approve", "rewrite": "approve", "deny": "deny"}
"""The policy actions that decide a call without a person, as verdicts. A rewrite lets
the call run with other arguments than the model's: an approval with edited arguments,
as a person's edit would be. ``ask`` is no decision: the person's (or the time-out's)
row follows."""


def decided_by_policy(event: core_events.Event) -> core_events.PolicyInfo | None:
    """What ``event`` records if it is a policy rule deciding a tool or sub-agent call by
    itself (a model call's decision has no call to audit)."""
    if event.type is not core_events.EventType.POLICY_DECISION:
        return None
    policy = event.policy
    if policy is None or policy.call_id is None or policy.action not in POLICY_VERDICTS:
        return None
    return policy


def record_policy_decisions(decided: Iterable[tuple[str, core_events.Event]]) -> None:
    """Store the audit row of each policy decision in ``decided`` (session key, stored
    ``decided_by_policy`` event), in the caller's transaction: the one storing the
    events, so a row exists exactly when its event does. The row belongs to the
    session's latest run of the event's invocation (a resumed run goes on with it).
    Once per call: a call of that invocation with a row already (its event stored
    again, or decided again after a resume) gets none."""
    invocations: dict[tuple[str, str], _Invocation | None] = {}
    rows = []
    for session_key, event in decided:
        policy = decided_by_policy(event)
        if policy is None or policy.call_id is None:
            continue
        key = (session_key, event.invocation_id)
        if key not in invocations:
            invocations[key] = _Invocation.of(*key)
        found = invocations[key]
        if found is None or policy.call_id in found.decided:
            continue
        found.decided.add(policy.call_id)
        rows.append(_policy_row(found.run_id, found.session_id, policy.call_id, policy))
    if rows:  # ignore_conflicts: a concurrent writer's row stands (approval_decision_once)
        ApprovalDecision.objects.bulk_create(rows, ignore_conflicts=True)


@dataclass(slots=True)
class _Invocation:
    """A session's latest run of one invocation, and the calls it has rows for."""

    run_id: Any
    session_id: Any
    decided: set[str]

    @classmethod
    def of(cls, session_key: str, invocation_id: str) -> _Invocation | None:
        found = (
            Run.objects.filter(session__key=session_key, invocation_id=invocation_id)
            .order_by("-created_at")
            .values_list("pk", "session_id")
            .first()
        )
        if found is None:
            return None
        rows = ApprovalDecision.objects.filter(
            session_id=found[1], run__invocation_id=invocation_id
        )
        return cls(found[0], found[1], set(rows.values_list("call_id", flat=True)))


def _policy_row(
    run_id: Any, session_id: Any, call_id: str, policy: core_events.PolicyInfo
) -> ApprovalDecision:
    tool = _tool_of(policy)
    verdict = POLICY_VERDICTS[policy.action]
    approved = None
    if verdict == "approve":
        approved = policy.rewritten_args if policy.rewritten_args is not None else policy.args
    return ApprovalDecision(
        session_id=session_id,
        run_id=run_id,
        call_id=call_id,
        tool=tool[:200],
        decision=verdict,
        channel=DecisionChannel.POLICY,
        decided_by_name=policy.rule,
        args_hash=core_approvals.args_hash(tool, policy.args),
        args_shown=policy.args,
        args_approved=approved,
        reason=policy.reason,
    )


def _tool_of(policy: core_events.PolicyInfo) -> str:
    """The tool called: a tool rule's subject is the tool; an agent rule's is the agent,
    called through the tool of its name or handed over to (``{"agent_name": ...}``)."""
    if policy.target == "agent" and set(policy.args) == {"agent_name"}:
        return TRANSFER_TOOL_NAME
    return policy.subject
