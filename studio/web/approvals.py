"""The approval inbox page, ``/approvals/``: every call waiting for the signed-in
user's decision across their sessions, with its arguments as formatted JSON, to approve,
deny with a reason, or approve with edited arguments, one at a time or several
selected at once (decisions through the page: channel ``page``), above them the
questions agents asked the user that wait for an answer, each answered in place or in
its linked session, with the newest decisions taken below, whatever took them; and
the count in the navigation bar of every page (``inbox_count``), kept live by
``app.js`` over ``/ws/approvals/``. Arguments and questions are shown as text, never
as HTML."""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

from asgiref.sync import async_to_sync
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from pydantic import ValidationError

from agents_core.approvals import MAX_ANSWER_CHARS
from studio import live, services
from studio.errors import ConflictError, InvalidInputError
from studio.models import ApprovalDecision, Session
from studio.services.inbox import pending, pending_count

MAX_SELECTED = 100
RECENT_DECISIONS = 20
"""The audit trail's newest rows the page shows below the inbox (all: the CSV)."""


def inbox_count(request: HttpRequest) -> dict[str, Any]:
    """Template context: what waits for the user in the inbox (calls waiting for a
    decision, questions waiting for an answer), for the navigation's badge."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"approvals_pending": pending_count(cast("User", user))}


@login_required
@require_GET
def approval_inbox(request: HttpRequest) -> HttpResponse:
    approvals, questions = pending(_user(request))
    items = [
        {"item": item, "args_json": json.dumps(item.args, indent=2, ensure_ascii=False)}
        for item in approvals
    ]
    decisions = (
        ApprovalDecision.objects.filter(session__owner=_user(request))
        .select_related("session")
        .order_by("-decided_at")[:RECENT_DECISIONS]
    )
    context = {
        "items": items,
        "questions": questions,
        "max_answer_chars": MAX_ANSWER_CHARS,
        "decisions": decisions,
        "section": "approvals",
    }
    return render(request, "studio/approval_inbox.html", context)


@login_required
@require_POST
def approval_decide(request: HttpRequest) -> HttpResponse:
    """One row's decision (``session``, ``call_id``, ``args_hash``, ``decision``:
    approve, deny or edit, ``reason``, ``edited_args``), or the selected rows' (``pick``,
    each ``session:args_hash:call_id``, with ``decision`` and ``reason``)."""
    user = _user(request)
    picks = request.POST.getlist("pick")[:MAX_SELECTED]
    rows = [_split(pick) for pick in picks] if picks else [_one(request)]
    verdict = request.POST.get("decision", "")
    edited = None
    if verdict == "edit":
        edited = _edited(request.POST.get("edited_args", ""))
        if edited is None:
            messages.error(request, 'The edited arguments must be a JSON object, e.g. {"a": 1}.')
            return redirect("approvals")
    decided, refused = 0, []
    for session_id, args_hash, call_id in rows:
        session = _owned(user, session_id)
        try:
            body = live.ApprovalBody(
                call_id=call_id,
                args_hash=args_hash,
                decision="approve" if verdict == "edit" else verdict,
                edited_args=edited,
                reason=request.POST.get("reason", "")[:2000],
            )
        except ValidationError:
            raise Http404("no such approval") from None
        try:
            services.decide(session, body, user=user, via="page")
            decided += 1
        except (ConflictError, InvalidInputError) as exc:
            refused.append(f"{call_id}: {exc.message}")
    if decided:
        messages.success(request, f"{decided} decided.")
    for message in refused:
        messages.error(request, message)
    return redirect("approvals")


@login_required
@require_POST
def approval_answer(request: HttpRequest) -> HttpResponse:
    """The answer to one question listed in the inbox (``session``, ``call_id``,
    ``args_hash``, ``text``): the run that asked it goes on with it, as when it is typed
    in the session."""
    user = _user(request)
    session = _owned(user, request.POST.get("session", ""))
    text = request.POST.get("text", "")
    if not text.strip():
        messages.error(request, "Type an answer first.")
        return redirect("approvals")
    try:
        body = live.AnswerBody(
            call_id=request.POST.get("call_id", ""),
            args_hash=request.POST.get("args_hash", ""),
            text=text,
        )
    except ValidationError as exc:
        wrong = [error for error in exc.errors() if error["loc"] == ("text",)]
        if not wrong:  # the call or its hash: no question the page listed
            raise Http404("no such question") from None
        too_long = wrong[0]["type"] == "string_too_long"
        why = f"it has at most {MAX_ANSWER_CHARS:,} characters" if too_long else wrong[0]["msg"]
        messages.error(request, f"The answer was not sent: {why}.")
        return redirect("approvals")
    try:
        async_to_sync(services.answer_question)(session, body, answered_by=user.get_username())
    except ConflictError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Answer sent; the agent goes on with it.")
    return redirect("approvals")


def _user(request: HttpRequest) -> User:
    return cast("User", request.user)


def _one(request: HttpRequest) -> tuple[str, str, str]:
    post = request.POST
    return post.get("session", ""), post.get("args_hash", ""), post.get("call_id", "")


def _split(pick: str) -> tuple[str, str, str]:
    session, _, rest = pick.partition(":")
    args_hash, _, call_id = rest.partition(":")
    return session, args_hash, call_id


def _edited(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _owned(user: User, session_id: str) -> Session:
    try:
        key = uuid.UUID(session_id)
    except ValueError:
        raise Http404("no such session") from None
    session = Session.objects.filter(owner=user, pk=key).first()
    if session is None:
        raise Http404("no such session")
    return session
