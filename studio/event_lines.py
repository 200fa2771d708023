"""A stored event in words, on one line: what it says or does. ``manage.py run_agent``
prints one per event as it arrives; the admin's events show one beside their seq, type
and author, where a tool call, its result or an error has no text of its own."""

from __future__ import annotations

import json

from agents_core.events import Event


def what_it_did(event: Event) -> list[str]:
    """The tools ``event`` calls (``→``) and their results (``←``), its error (``!``)
    and its change of the session's state, each a phrase."""
    done = [f"→ {call.name}({_json(call.args)})" for call in event.tool_calls]
    done += [f"← {result.name}: {result.output}" for result in event.tool_results]
    if event.error is not None:
        done.append(f"! {event.error.code}: {event.error.message}")
    if event.actions.state_delta:
        done.append(f"state {_json(event.actions.state_delta)}")
    return done


def summary(event: Event) -> str:
    """Its text, then what it did (``what_it_did``)."""
    return " ".join([event.text, *what_it_did(event)] if event.text else what_it_did(event))


def describe(event: Event) -> str:
    """Its seq, type and author, then its text (after ``·``) and what it did."""
    said = [f"· {event.text}"] if event.text else []
    return " ".join([f"#{event.seq}", event.type.value, event.author, *said, *what_it_did(event)])


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
