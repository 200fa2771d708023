"""``generate_history``: a made-up history the pages, the API and the spans read exactly
as a real one, written fast and the same for the same seed."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Max
from django.test import Client
from django.urls import reverse

from agents_core import events as core_events
from studio import costs
from studio.agents.demo import DEMO_AGENTS
from studio.management.history import Plan, generate
from studio.models import Event, ModelDay, Run, RunSpans, RunStatus, Session
from studio.rollups import days
from studio.rollups.queries import MODEL_CALL
from studio.traces.reads import SPANS_JSON, run_spans
from tests.studio.conftest import client_for

pytestmark = pytest.mark.django_db

TINY = Plan(users=3, sessions=20, events=2_000, big_sessions=1, big_events=400, seed=7)


def _generate(plan: Plan = TINY, *extra: str) -> str:
    out = io.StringIO()
    call_command(
        "generate_history",
        f"--users={plan.users}",
        f"--sessions={plan.sessions}",
        f"--events={plan.events}",
        f"--big-sessions={plan.big_sessions}",
        f"--big-events={plan.big_events}",
        f"--seed={plan.seed}",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def test_the_command_writes_what_it_says(settings: Any) -> None:
    settings.DEBUG = True
    said = _generate()
    counts = (Session.objects.count(), Run.objects.count(), Event.objects.count())
    agents = 3 * len(DEMO_AGENTS)  # each user has the demo account's agents
    assert f"wrote 3 users, {agents} agents, {counts[0]} sessions, {counts[1]} runs and " in said
    assert f" runs and {counts[2]} events in " in said
    assert counts[0] == TINY.sessions
    assert 0.5 * TINY.events < counts[2] < 2 * TINY.events
    assert RunSpans.objects.count() == counts[1]


def test_every_stored_payload_is_an_event_in_its_canonical_wire_form(settings: Any) -> None:
    settings.DEBUG = True
    _generate()
    for row in Event.objects.all():
        event = core_events.Event.model_validate(row.payload)
        assert event.to_wire() == row.payload
        assert (event.seq, event.type.value, event.text) == (row.seq, row.type, row.text)
        assert event.session_id == row.session.key


def test_seq_is_contiguous_per_session_and_last_seq_is_the_newest() -> None:
    generate(TINY, log=lambda _: None)
    seqs: dict[Any, list[int]] = defaultdict(list)
    for session_id, seq in Event.objects.order_by("seq").values_list("session_id", "seq"):
        seqs[session_id].append(seq)
    newest = dict(
        Event.objects.values("session").annotate(m=Max("seq")).values_list("session", "m")
    )
    for session in Session.objects.all():
        assert seqs[session.pk] == list(range(1, session.last_seq + 1))
        assert newest[session.pk] == session.last_seq
        assert session.status == session.runs.order_by("-created_at").first().status  # type: ignore[union-attr]


def test_runs_cover_their_events_with_their_tokens_and_timing() -> None:
    generate(TINY, log=lambda _: None)
    for run in Run.objects.select_related("session"):
        events = Event.objects.filter(session=run.session, invocation_id=run.invocation_id)
        seqs = sorted(events.values_list("seq", flat=True))
        assert seqs[0] == run.start_seq + 1  # type: ignore[operator]
        usage = [e.usage for e in events if e.usage]
        assert run.input_tokens == sum(u["input_tokens"] for u in usage)
        assert run.output_tokens == sum(u["output_tokens"] for u in usage)
        assert run.timing is not None
        assert run.timing["total_ms"] == pytest.approx(
            sum(
                run.timing[k]
                for k in ("queued_ms", "model_ms", "tools_ms", "human_ms", "overhead_ms")
            ),
            abs=0.01,
        )
        assert (run.error_code == "") == (run.status == RunStatus.SUCCEEDED)
    big = Run.objects.filter(session__title__endswith="(#0)").get()
    assert big.status == RunStatus.SUCCEEDED
    assert Event.objects.filter(invocation_id=big.invocation_id).count() >= 0.8 * TINY.big_events


def test_a_generated_run_draws_its_spans_and_its_timeline_for_its_owner() -> None:
    generate(TINY, log=lambda _: None)
    run = Run.objects.select_related("session__owner").filter(session__title__endswith="(#0)").get()
    owner = run.session.owner
    response = client_for(owner).get(f"/api/runs/{run.pk}/spans/")
    assert response.status_code == 200
    spans = json.loads(response.content)["spans"]
    kinds = {span["kind"] for span in spans}
    assert {"agent", "model", "tool"} <= kinds
    assert all(span["end"] is not None for span in spans)
    derived = json.loads(SPANS_JSON.dump_json(run_spans(run)))
    assert spans == derived  # what was kept is what the run's events draw
    page = Client()
    page.force_login(owner)
    assert page.get(reverse("session-timeline", args=[run.session.pk])).status_code == 200


def test_the_same_seed_writes_the_same_history() -> None:
    def snapshot() -> list[Any]:
        rows = Event.objects.order_by("session__created_at", "seq")
        return list(rows.values_list("session_id", "seq", "payload"))

    generate(TINY, log=lambda _: None)
    first = snapshot()
    Session.objects.all().delete()
    generate(TINY, log=lambda _: None)
    assert snapshot() == first


def test_it_refuses_with_debug_off_unless_forced(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG is off"):
        _generate()
    assert not Session.objects.exists()
    tiny = Plan(users=1, sessions=2, events=20, big_sessions=0)
    assert "2 sessions" in _generate(tiny, "--force")


@pytest.mark.parametrize(
    ("argument", "complaint"),
    [
        ("--users=0", "users must be at least 1"),
        ("--sessions=0", "sessions must be at least 1"),
        ("--big-sessions=30", "big sessions must be between 0 and sessions"),
        ("--big-events=2", "big events must be at least 6"),
        ("--events=100", "events must be at least big sessions x big events"),
    ],
)
def test_bad_arguments_are_refused_in_words(settings: Any, argument: str, complaint: str) -> None:
    settings.DEBUG = True
    with pytest.raises(CommandError, match=complaint):
        _generate(TINY, argument)
    assert not Session.objects.exists()


def test_generated_calls_are_priced_attributed_and_added_up_per_day_as_real_ones() -> None:
    generate(TINY, log=lambda _: None)
    calls = Event.objects.filter(MODEL_CALL)
    assert calls.exists() and not calls.filter(run__isnull=True).exists()
    assert set(calls.values_list("model", flat=True)) == {"demo"}  # the demo config's model
    for run in Run.objects.all():
        own = calls.filter(run=run)
        amount = sum((row.cost for row in own), Decimal(0))
        assert (run.cost, run.cost_currency, run.cost_complete) == (amount, "USD", True)
    kept = {(d.owner_id, d.day, d.model): (d.calls, d.cost) for d in ModelDay.objects.all()}
    # SQLite adds decimals up as floats (0.631687000000001); the row keeps the field's
    # places, as it keeps any amount.
    places = Decimal(1).scaleb(-costs.PLACES)
    summed = {
        (g["session__owner_id"], g["day"], g["model"]): (
            g["calls"],
            Decimal(g["cost"]).quantize(places),
        )
        for g in days.grouped(calls, "session__owner_id")
    }
    assert kept == summed and sum(calls for calls, _ in kept.values()) == calls.count()
