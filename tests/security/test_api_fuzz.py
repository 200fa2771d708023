"""schemathesis over /api/schema/: every operation, generated requests sent in-process
to the WSGI application as a signed-in user (token auth, as the schema declares). No
request may get a server error or a response the schema does not describe, and a
request the schema calls valid is only refused for a reason the schema cannot state (a
name already taken, an object that is not yours, wrong credentials). An operation with
a body or several query parameters gets 100 requests; one that takes only an id or a
page number 30; one that takes nothing 10 (``examples()``).

WSGI rather than ASGI: both hand requests to the same Django views, and WSGI keeps each
request on this thread, inside a savepoint rolled back after it, so the examples do not
see each other's writes and the fixture objects survive every DELETE.

Half of the requests to an operation with an ``{id}`` (or, comparing runs, run ids in
its query) name one of the user's own objects (the other half a generated id), and half
of the bodies that name an agent name the user's own, so the fuzzer gets past the 404s
and "no such agent"s. An AgentSpec is recursive (sub-agents are specs), which
schemathesis's generator does not follow (it sends any JSON value): specs come from
``agent_specs()`` below instead, naming the user's model or an unknown one.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from agents_core import events as core_events
from agents_core import specs as core_specs
from studio import checked_http, evals, security
from studio.models import (
    Agent,
    Dataset,
    McpServer,
    ModelConfig,
    RemoteAgent,
    Run,
    RunStatus,
    Session,
)
from studio.models.evals import EvalRun
from studio.services import datasets
from studio.session_service import append_event_sync
from tests.studio.conftest import make_agent, make_session

EXAMPLES = 100
"""Examples for an operation whose input varies: a body, or two or more query parameters."""
FEW_EXAMPLES = 30
"""For one that takes at most a path id or a page number: own id or another, a page."""
FIXED_EXAMPLES = 10
"""For one that takes no input at all, whose every request is the same."""

wsgi_application = get_wsgi_application()
schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_application)
OPERATIONS = [result.ok() for result in schema.get_all_operations()]

# 400 codes a schema-valid request may still meet: facts about stored objects or
# credentials, which an OpenAPI schema cannot state. Anything else is a schema gap.
STATEFUL_CODES = {
    "authorization",  # wrong username or password (POST /api/auth/token/)
    "does_not_exist",  # a related id that is not one of yours
    "unique",  # a name you already use
    "in_use",  # renaming what other agents refer to by name
    "spec_error",  # a spec naming models, tools or agents you do not have
    # A URL whose host does not resolve, or resolves to an address the deployment's
    # STUDIO_OUTBOUND_ALLOWLIST does not admit (studio.security).
    "unresolvable",
    "address_not_allowed",
    "outbound_url",  # the same check, as the MCP servers API reports it
    # An attached file's type and size, read from its bytes (studio.files), and whether
    # the session's models take files at all: not what a schema's "binary" can say.
    "file_type_not_allowed",
    "file_empty",
    "file_too_large",
    "model_takes_no_files",
    # An artifact name's rules (no control or format characters, no leading or trailing
    # spaces, not "." or ".."; agents_core.artifacts.checked_name) beyond its pattern.
    "artifact_name",
    # A skill's archive or folder: its paths, sizes, text and SKILL.md (agents_core.skills).
    "skill_format",
    # A run bundle's content (studio.bundles.checks): its JSON, zip, version, schema,
    # secrets, events and attached files, all inside one file the schema can only call
    # binary.
    "bundle_too_large",
    "bundle_bad_zip",
    "bundle_not_json",
    "bundle_too_deep",
    "bundle_format",
    "bundle_version",
    "bundle_schema",
    "bundle_has_secret",
    "bundle_bad_event",
    "bundle_seq_gap",
    "bundle_bad_run",
    "bundle_bad_approval",
    "bundle_bad_spec",
    "bundle_bad_file",
    "bundle_file_too_large",
    "bundle_files_too_large",
    "bundle_file_type",
    "bundle_file_digest",
    # A fork point: a stored event of the session, and what that event has to edit.
    "no_such_event",
    "not_editable",
    "no_such_call",
    # An eval's evaluators: a judge naming a model configuration you do not have, a
    # custom evaluator nobody registered.
    "unknown_model",
    "unknown_evaluator",
    # A dataset file's content (agents_core.evals.formats): its lines, columns, cases.
    "dataset_format",
}
# Cross-field requirements (a field needed given another's value, possibly the stored
# one on PATCH), which OpenAPI has no plain way to say.
CONDITIONAL_FIELDS = {
    ("model", "required"),
    ("url", "required"),
    ("command", "required"),
    # A skill upload: a zip or a folder (not both), and a folder's paths, one per file.
    ("archive", "archive_or_files"),
    ("paths", "paths_mismatch"),
}
# A schema-valid empty file sent as a part without a file name: Django's multipart parser
# drops an empty field, so the (required) file arrives missing.
CONDITIONAL_FIELDS |= {("file", "required")}
# Edited arguments are free-form JSON, whose strings may not hold NUL (PostgreSQL cannot
# store it): OpenAPI has no way to say so inside an arbitrary object.
CONDITIONAL_FIELDS |= {("edited_args", "invalid")}
# An eval's evaluator specs: the schema gives each its ``kind``; the fields each kind
# needs (and forbids) are the core's contract (agents_core.evals.contracts), checked by
# pydantic, and a regular expression or JSON Schema inside one must compile.
# Their strings, like edited arguments', may not hold NUL either.
CONDITIONAL_FIELDS |= {("evaluators", "invalid"), ("evaluators", "unstorable_text")}
# The same for a dataset case's free-form JSON (its state, its expected arguments).
CONDITIONAL_FIELDS |= {("case", "unstorable_text"), ("cases", "unstorable_text")}


def test_every_api_route_is_in_the_schema() -> None:
    labels = {operation.label for operation in OPERATIONS}
    for expected in (
        "POST /api/auth/token/",
        "POST /api/agents/import/",
        "POST /api/sessions/{id}/messages/",
        "POST /api/sessions/{id}/approvals/",
        "POST /api/runs/{id}/cancel/",
        "POST /api/runs/{id}/replay/",
        "DELETE /api/models/{id}/",
        "GET /api/runs/compare/",
        "POST /api/evals/",
        "GET /api/evals/{id}/results/",
        "POST /api/evals/{id}/cancel/",
        "GET /api/evals/compare/",
        "GET /api/evals/history/",
        "GET /api/evaluators/",
        "GET /api/sessions/{id}/bundle/",
        "POST /api/bundles/import/",
    ):
        assert expected in labels
    assert len(labels) >= 32
    # OTLP ingest speaks protobuf and signs in with its own tokens: not a DRF route, so
    # not in the schema (tests/security/test_otlp_fuzz.py fuzzes it directly).
    assert not any("/v1/traces" in label for label in labels)


@dataclass(frozen=True)
class Fixtures:
    """The user's objects the fuzzer's requests may name."""

    token: str
    agent: Agent
    model: ModelConfig
    session: Session
    run: Run
    mcp_server: McpServer
    dataset: Dataset
    eval_run: EvalRun
    remote_agent: RemoteAgent

    def path_ids(self, path: str) -> dict[str, Any]:
        """Path parameters naming the user's own object, or {} for other resources."""
        ids = {"agents": self.agent, "models": self.model, "sessions": self.session}
        ids["runs"] = self.run
        ids["mcp-servers"] = self.mcp_server
        ids["remote-agents"] = self.remote_agent
        ids["datasets"] = self.dataset
        ids["evals"] = self.eval_run
        owned = ids.get(path.split("/")[2])
        if owned is None or "{id}" not in path:
            return {}
        named = {"name": "greeting"} if "{name}" in path else {}  # a case of the dataset
        return {"id": str(owned.pk), **({"number": 1} if "{number}" in path else {}), **named}

    def query_ids(self, path: str) -> dict[str, Any]:
        """Query parameters naming the user's own objects, or {} for other operations."""
        if path == "/api/runs/compare/":  # two runs: here one run, compared with itself
            return {"a": str(self.run.pk), "b": str(self.run.pk)}
        if path == "/api/evals/compare/":  # an eval run compared with itself
            return {"a": str(self.eval_run.pk), "b": str(self.eval_run.pk)}
        return {}


@pytest.fixture
def fixtures(ada: User) -> Fixtures:
    agent = make_agent(ada)
    session = make_session(ada, agent)
    run = Run.objects.create(session=session, message="hi", status=RunStatus.SUCCEEDED)
    for event in (  # fork points for POST /api/sessions/{id}/forks/
        core_events.user_message(session.key, "hi"),
        core_events.Event(
            type=core_events.EventType.AGENT_MESSAGE,
            invocation_id="i",
            session_id=session.key,
            author="helper",
            parts=[core_events.TextPart(text="hello")],
        ),
    ):
        append_event_sync(session.key, event)
    model = ModelConfig.objects.get(owner=ada, name="scripted")
    token = Token.objects.create(user=ada).key
    mcp_server = McpServer.objects.create(
        owner=ada, name="docs", transport=McpServer.Transport.HTTP, url="https://mcp.example/mcp"
    )
    dataset = datasets.create_dataset(
        ada, "smoke", cases=[{"name": "greeting", "input": {"turns": ["hi"]}}]
    )
    evaluated = datasets.create_dataset(  # its own: the fuzzer may delete the one above
        ada, "evaluated", cases=[{"name": "greeting", "input": {"turns": ["hi"]}}]
    )
    eval_run = evals.create_eval(ada, agent=agent, dataset=evaluated)
    # Its card is on a closed loopback port: reading it again fails at once, and says so.
    remote_agent = RemoteAgent.objects.create(owner=ada, name="billing", url="http://127.0.0.1:9/")
    return Fixtures(token, agent, model, session, run, mcp_server, dataset, eval_run, remote_agent)


@pytest.fixture
def _offline_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated URLs name hosts and public addresses that this machine cannot reach
    (it has no internet): a name is "not known" after ~0.2 s, a connection to a public
    address waits for its time-out. An operation that stores a URL (a remote agent's
    card is fetched at once) took 45 s of that. Here the edge of the world answers at
    once, as it would offline: ``localhost`` is loopback and no other name resolves,
    and a connection to an address off this machine fails. The outbound checks around
    both are the real ones."""
    admitted = checked_http.admitted_addresses

    def resolver(host: str, port: int) -> list[str]:
        if host == "localhost":
            return ["127.0.0.1"]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def loopback_only(host: str, port: int) -> list[str]:
        addresses = admitted(host, port)  # the real checks, with the resolver above
        if not all(ipaddress.ip_address(a).is_loopback for a in addresses):
            raise checked_http.RefusedConnectError(host, "offline", "no route off this machine")
        return addresses

    monkeypatch.setattr(security, "system_resolver", resolver)
    monkeypatch.setattr(checked_http, "admitted_addresses", loopback_only)


@pytest.fixture
def _one_connection() -> Iterator[None]:
    """Requests share the test's connection (and its transaction), as Django's test
    client arranges: the WSGI handler would otherwise close it after each request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


NAME = st.from_regex(core_specs.NAME_PATTERN, fullmatch=True)
# Text as JSON carries it: no NUL (PostgreSQL cannot store it) and no lone surrogate
# (half of a UTF-16 pair, not a character; the API refuses both as unstorable_text).
TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=300)


def agent_specs(model: str) -> st.SearchStrategy[dict[str, Any]]:
    """LLM agent specs within the AgentSpec schema, naming ``model`` or another name."""
    return st.fixed_dictionaries(
        {"name": NAME, "model": st.sampled_from([model, "gpt-x"])},
        optional={
            "type": st.sampled_from(["llm", "react"]),
            "description": TEXT,
            "instruction": TEXT,
            "max_iterations": st.integers(1, 1000),
            "output_key": st.from_regex(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", fullmatch=True),
        },
    )


def examples(operation: Any) -> int:
    """How many requests to fuzz ``operation`` with: a hundred where the input can vary
    (hypothesis's default), fewer where it can hardly vary, so that the time goes where
    the schema leaves room for surprises."""
    if len(list(operation.body)) or len(list(operation.query)) >= 2:
        return EXAMPLES
    if len(list(operation.query)) or len(list(operation.path_parameters)):
        return FEW_EXAMPLES
    return FIXED_EXAMPLES


def test_inputs_that_vary_get_the_most_examples() -> None:
    by_label = {operation.label: examples(operation) for operation in OPERATIONS}
    assert by_label["POST /api/agents/"] == EXAMPLES
    assert by_label["GET /api/sessions/"] == EXAMPLES  # six filters
    assert by_label["GET /api/agents/{id}/"] == FEW_EXAMPLES
    assert by_label["GET /api/tools/"] == FIXED_EXAMPLES


def cases(operation: Any, fixtures: Fixtures) -> st.SearchStrategy[Any]:
    generated = operation.as_strategy(generation_mode=GenerationMode.POSITIVE)
    own_ids = fixtures.path_ids(operation.path)
    if own_ids:
        own = operation.as_strategy(
            generation_mode=GenerationMode.POSITIVE, path_parameters=own_ids
        )
        generated = st.one_of(generated, own)
    if own_query := fixtures.query_ids(operation.path):
        own = operation.as_strategy(generation_mode=GenerationMode.POSITIVE, query=own_query)
        generated = st.one_of(generated, own)
    specs = agent_specs(fixtures.model.name)

    def extras(case: Any) -> st.SearchStrategy[tuple[Any, bool, dict[str, Any] | None]]:
        # A spec is drawn only for a body that has one: drawn for every request of every
        # operation, it was a fifth of hypothesis's work, thrown away.
        has_spec = isinstance(case.body, dict) and "spec" in case.body
        return st.tuples(st.just(case), st.booleans(), specs if has_spec else st.none())

    return generated.flatmap(extras).map(lambda drawn: _complete(*drawn, fixtures))


def _complete(case: Any, own: bool, spec: dict[str, Any] | None, fixtures: Fixtures) -> Any:
    """A drawn spec in place of the generated one; for half the bodies, the user's own
    agent and (in the spec) the agent's own name."""
    body = case.body
    if not isinstance(body, dict):
        return case
    if "spec" in body and spec is not None:
        body["spec"] = spec
        if own and "name" in body:
            spec["name"] = body["name"]
    if own and "agent" in body:
        body["agent"] = str(fixtures.agent.pk)
    if own and "dataset" in body and "agent" in body:  # an eval's dataset, by name
        body["dataset"] = fixtures.eval_run.dataset_version.dataset.name
    return case


def refused_for_a_schema_reason(response: Any) -> list[tuple[str, str]]:
    """The (path, code) of each problem in a 400 that the schema could have stated."""
    if response.status_code != 400:
        return []
    problems = response.json().get("errors") or [{"path": "", "code": response.json()["code"]}]
    return [
        (p["path"], p["code"])
        for p in problems
        if p["code"] not in STATEFUL_CODES
        and (p["path"].split(".")[0], p["code"]) not in CONDITIONAL_FIELDS
    ]


@pytest.mark.django_db
@pytest.mark.usefixtures("_one_connection", "_offline_at_once", "long_texts_unfolded")
@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_operation(operation: Any, fixtures: Fixtures) -> None:
    headers = {"Authorization": f"Token {fixtures.token}"}
    statuses: dict[int, int] = {}
    count = examples(operation)
    started = time.monotonic()
    auth_confirmed: list[str] = []  # not empty once an answered request passed ignored_auth

    @given(case=cases(operation, fixtures))
    @settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def fuzz(case: Any) -> None:
        with transaction.atomic():
            response = case.call(headers=headers)
            transaction.set_rollback(True)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        # ignored_auth sends each answered request again without and with a wrong token:
        # enforcing auth is the operation's, not the input's, so once one of its answered
        # requests passed it, it is confirmed (schemathesis's runner checks it once too).
        # Sent for every request, it was two fifths of this file's time.
        excluded = [positive_data_acceptance, *([ignored_auth] if auth_confirmed else [])]
        case.validate_response(response, headers=headers, excluded_checks=excluded)
        if 200 <= response.status_code < 300:
            auth_confirmed.append(operation.label)
        problems = refused_for_a_schema_reason(response)
        assert not problems, f"schema-valid body refused: {problems}: {response.text[:500]}"

    fuzz()
    seconds = time.monotonic() - started
    print(f"\n{operation.label}: {sum(statuses.values())} requests, {seconds:.1f}s, {statuses}")
    assert sum(statuses.values()) >= count
