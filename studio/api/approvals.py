"""The approval inbox over HTTP, scoped to the requesting user:

- ``GET /api/approvals/``: every call waiting for their decision, across sessions;
- ``POST /api/approvals/decide/``: decide one or several of them, each on its own;
- ``GET /api/approvals/decisions/``: the audit trail of decisions on their calls
  (filters ``session``, ``tool``, ``channel``, ``decision``), and ``.../export/`` as CSV.

Another user's session is 404, as if it did not exist."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import live, services
from studio.api.schema import error_responses
from studio.models import ApprovalDecision, Session
from studio.models.approvals import DecisionChannel
from studio.services.inbox import pending_payload

MAX_AT_ONCE = 100
CSV_COLUMNS = (
    "decided_at", "session", "run", "call_id", "tool", "decision", "channel",
    "decided_by", "reason", "args_hash", "args_shown", "args_approved", "edited",
)  # fmt: skip


class _InboxItemSerializer(serializers.Serializer[object]):
    session_id = serializers.UUIDField()
    session_title = serializers.CharField()
    session_url = serializers.CharField(help_text="The session's timeline page.")
    run_id = serializers.UUIDField()
    agent = serializers.CharField()
    agent_version = serializers.IntegerField(allow_null=True)
    call_id = serializers.CharField()
    args_hash = serializers.CharField(help_text="Send it back with the decision or the answer.")
    waiting_since = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the wait ends without a person; null: it waits as long as it must.",
    )


class PendingApprovalSerializer(_InboxItemSerializer):
    tool = serializers.CharField()
    args = serializers.JSONField()
    args_schema = serializers.JSONField(allow_null=True, help_text="What edited args must match.")
    on_timeout = serializers.ChoiceField(
        choices=["approve", "deny"],
        allow_null=True,
        help_text="What happens to the call at expires_at if nobody decides.",
    )


class PendingQuestionSerializer(_InboxItemSerializer):
    question = serializers.CharField(
        help_text="Answer it with POST /api/sessions/<session_id>/answers/ "
        "(call_id, args_hash, text), or on the inbox page or in its session."
    )


class InboxSerializer(serializers.Serializer[object]):
    count = serializers.IntegerField(help_text="The calls waiting for a decision.")
    results = PendingApprovalSerializer(many=True)
    questions = PendingQuestionSerializer(
        many=True,
        help_text="Questions agents asked, waiting for an answer "
        "(POST /api/sessions/<id>/answers/).",
    )


class DecisionItemSerializer(serializers.Serializer[object]):
    session = serializers.UUIDField()
    # As the call has it: an id of blanks is no call's (not a blank field to refuse).
    call_id = serializers.CharField(max_length=200, trim_whitespace=False)
    args_hash = serializers.RegexField(r"^[0-9a-f]{64}$")
    decision = serializers.ChoiceField(choices=["approve", "deny"])
    edited_args = serializers.JSONField(required=False, allow_null=True, default=None)
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class DecideSerializer(serializers.Serializer[object]):
    decisions = serializers.ListField(
        child=DecisionItemSerializer(), min_length=1, max_length=MAX_AT_ONCE
    )


class DecideResultSerializer(serializers.Serializer[object]):
    session = serializers.UUIDField()
    call_id = serializers.CharField()
    decided = serializers.BooleanField()
    decision_id = serializers.IntegerField(allow_null=True)
    code = serializers.CharField(help_text="Why not decided: approval_decided, approval_stale…")
    detail = serializers.CharField()


class DecideResultsSerializer(serializers.Serializer[object]):
    results = DecideResultSerializer(many=True)


class ApprovalDecisionSerializer(serializers.ModelSerializer[ApprovalDecision]):
    decided_by = serializers.CharField(source="decided_by_name")
    edited = serializers.BooleanField(read_only=True)

    class Meta:
        model = ApprovalDecision
        fields = [
            "id", "session", "run", "call_id", "tool", "decision", "channel", "decided_by",
            "decided_at", "args_hash", "args_shown", "args_approved", "edited", "reason",
        ]  # fmt: skip


class ApprovalInboxView(APIView):
    """Every tool call waiting for your decision, across your sessions, longest first;
    and every question an agent asked you that waits for your answer."""

    @extend_schema(responses=InboxSerializer, operation_id="approvals_inbox")
    def get(self, request: Request) -> Response:
        return Response(InboxSerializer(pending_payload(_user(request))).data)


class ApprovalDecideView(APIView):
    """Decide one or several pending approvals: approve (optionally with ``edited_args``,
    checked against the tool's JSON Schema), or deny with a reason. Each is decided on
    its own; a result says whether it was, or why not (``approval_decided`` when
    someone else decided it first, ``approval_stale`` when the arguments changed,
    ``approval_not_pending``, ``invalid``). With one decision, a refusal is the error
    itself (409 or 400)."""

    @extend_schema(
        request=DecideSerializer,
        responses={200: DecideResultsSerializer, **error_responses(400, 404, 409)},
        operation_id="approvals_decide",
    )
    def post(self, request: Request) -> Response:
        body = DecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        items = body.validated_data["decisions"]
        user = _user(request)
        sessions = _owned_sessions(user, {item["session"] for item in items})
        parsed = [(sessions[item["session"]], _approval_body(item)) for item in items]
        if len(parsed) == 1:
            session, one = parsed[0]
            row = services.decide(session, one, user=user, via="api")
            results = [_result(session, one.call_id, row.pk, "", "")]
        else:
            outcomes = services.decide_many(user, parsed, via="api")
            results = [
                _result(s, o.call_id, o.decision.pk if o.decision else None, o.code, o.message)
                for (s, _), o in zip(parsed, outcomes, strict=True)
            ]
        return Response({"results": results})


def _user(request: Request) -> User:
    return cast("User", request.user)  # authenticated: the API's default permission


def _owned_sessions(user: User, ids: set[Any]) -> dict[Any, Session]:
    found = {s.pk: s for s in Session.objects.filter(owner=user, pk__in=ids)}
    if len(found) != len(ids):
        raise NotFound("No such session.")
    return found


def _approval_body(item: dict[str, Any]) -> live.ApprovalBody:
    fields = {k: v for k, v in item.items() if k != "session"}
    if fields["edited_args"] is not None and not isinstance(fields["edited_args"], dict):
        raise ValidationError({"edited_args": ["Edited arguments are a JSON object."]})
    return live.ApprovalBody.model_validate(fields)


def _result(
    session: Session, call_id: str, decision_id: int | None, code: str, detail: str
) -> dict[str, Any]:
    return {
        "session": session.pk,
        "call_id": call_id,
        "decided": decision_id is not None,
        "decision_id": decision_id,
        "code": code,
        "detail": detail,
    }


FILTERS = [
    OpenApiParameter("session", OpenApiTypes.UUID, description="One session's decisions."),
    OpenApiParameter("tool", str),
    OpenApiParameter("channel", str, enum=DecisionChannel.values),
    OpenApiParameter("decision", str, enum=["approve", "deny"]),
]


def decisions_of(request: Request) -> QuerySet[ApprovalDecision]:
    """The user's decisions, filtered by the query string (bad values are 400)."""
    rows = ApprovalDecision.objects.filter(session__owner=_user(request))
    query = request.query_params
    if query.get("session"):
        try:
            session = serializers.UUIDField().to_internal_value(query["session"])
        except serializers.ValidationError as exc:
            raise ValidationError({"session": exc.detail}) from None
        rows = rows.filter(session_id=session)
    if query.get("tool"):
        rows = rows.filter(tool=query["tool"])
    for name, allowed in (("channel", DecisionChannel.values), ("decision", ["approve", "deny"])):
        value = query.get(name)
        if value and value not in allowed:
            raise ValidationError({name: [f"One of: {', '.join(allowed)}."]})
        if value:
            rows = rows.filter(**{name: value})
    return rows.order_by("-decided_at")


class ApprovalDecisionListView(APIView):
    """The audit trail: every decision on your tool calls, newest first (500 at most)."""

    @extend_schema(
        parameters=FILTERS,
        responses={200: ApprovalDecisionSerializer(many=True), **error_responses(400)},
        operation_id="approvals_decisions",
    )
    def get(self, request: Request) -> Response:
        rows = decisions_of(request)[:500]
        return Response(ApprovalDecisionSerializer(rows, many=True).data)


class ApprovalDecisionExportView(APIView):
    """The audit trail as CSV (same filters), newest first."""

    @extend_schema(
        parameters=FILTERS,
        responses={(200, "text/csv"): OpenApiTypes.STR, **error_responses(400)},
        operation_id="approvals_decisions_export",
    )
    def get(self, request: Request) -> HttpResponse:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(CSV_COLUMNS)
        for row in decisions_of(request).iterator():
            writer.writerow(_csv_row(row))
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="approval-decisions.csv"'
        return response


def _csv_row(row: ApprovalDecision) -> list[str]:
    def cell(text: str) -> str:  # no formula injection when opened in a spreadsheet
        return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text

    approved = "" if row.args_approved is None else json.dumps(row.args_approved, sort_keys=True)
    return [
        row.decided_at.isoformat(), str(row.session_id), str(row.run_id), cell(row.call_id),
        cell(row.tool), row.decision, row.channel, cell(row.decided_by_name), cell(row.reason),
        row.args_hash, json.dumps(row.args_shown, sort_keys=True), approved,
        "yes" if row.edited else "no",
    ]  # fmt: skip
