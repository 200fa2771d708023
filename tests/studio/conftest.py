"""Fixtures for the Django side: users, API clients, and stored objects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.local import Local
from django.contrib.auth.models import User
from django.tasks import task_backends
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from studio import costs, runs, services
from studio.models import Agent, ModelConfig, Session
from studio.runs.inline import InlineExecutor
from tests.support.openai_server import openai_server as openai_server


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """Real hashers are slow on purpose; tests create many users."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _allow_loopback_models(settings: Any) -> None:
    """The tests' OpenAI-compatible servers listen on 127.0.0.1, which Studio refuses
    unless the deployment allowlists it (studio.security)."""
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.0/8", "::1", "localhost"]


@pytest.fixture
def ada(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("ada", password="ada-password-1")


@pytest.fixture
def bob(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def staff(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user(
        "stafford", password="staff-password-1", is_staff=True, is_superuser=True
    )


def client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def api(ada: User) -> APIClient:
    """Ada's authenticated API client."""
    return client_for(ada)


def results(body: Any) -> list[Any]:
    """The items of a paginated (or plain list) response body."""
    return list(body["results"] if isinstance(body, dict) else body)


def scripted_model(owner: User, name: str = "scripted") -> ModelConfig:
    return ModelConfig.objects.create(owner=owner, name=name, provider="scripted")


def simple_spec(name: str = "helper", model: str = "scripted", **extra: Any) -> dict[str, Any]:
    return {"name": name, "model": model, "instruction": "Reply: hello", **extra}


def make_agent(owner: User, name: str = "helper", **spec: Any) -> Agent:
    if not ModelConfig.objects.filter(owner=owner, name="scripted").exists():
        scripted_model(owner)
    return services.create_agent(owner, name=name, spec=simple_spec(name, **spec))


def remote_model(
    owner: User,
    base_url: str,
    *,
    model: str = "fake-model",
    api_key: str | None = None,
    price: costs.Price | None = None,
) -> ModelConfig:
    """An OpenAI-compatible model config named ``remote`` at ``base_url`` (a test
    server), with a key and a price when given."""
    config = ModelConfig(
        owner=owner, name="remote", provider="openai_compatible", model=model, base_url=base_url
    )
    if api_key is not None:
        config.set_api_key(api_key)
    if price is not None:
        config.set_price(price)
    config.save()
    return config


def make_session(owner: User, agent: Agent | None = None, **fields: Any) -> Session:
    if agent is None:
        agent = Agent.objects.filter(owner=owner, name="helper").first() or make_agent(owner)
    return services.start_session(owner, agent, **fields)


class RecordingExecutor(InlineExecutor):
    """The inline executor, noting which runs it was handed and told were cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted: list[Any] = []
        self.cancelled: list[Any] = []

    def submit(self, run: Any) -> None:
        self.submitted.append(run.pk)
        super().submit(run)

    def cancel(self, run: Any) -> None:
        self.cancelled.append(run.pk)
        super().cancel(run)


@pytest.fixture
def recording_executor() -> Any:
    """The executor services hand runs to, recording what it was told."""
    chosen = runs._executor
    runs._executor = recording = RecordingExecutor()
    yield recording
    runs._executor = chosen


def signed_in(user: User) -> Client:
    """A page client signed in as ``user`` (a session cookie, as a browser has)."""
    client = Client()
    client.force_login(user)
    return client


def post_agent(user: User, spec: dict[str, Any]) -> Any:
    """``POST /api/agents/`` of ``spec`` as ``user``."""
    return client_for(user).post(
        "/api/agents/", {"name": spec["name"], "spec": spec}, format="json"
    )


def error_paths(response: Any) -> dict[str, str]:
    """A 400's validation errors, by their path inside the request."""
    assert response.status_code == 400, response.content
    return {e["path"]: e["detail"] for e in response.json()["errors"]}


def forget_task_backends() -> None:
    """Django caches the TASKS backends on first use; tests change the setting."""
    task_backends._settings = None
    task_backends.__dict__.pop("settings", None)
    task_backends._connections = Local(task_backends.thread_critical)


@pytest.fixture
async def worker_execution(settings: Any) -> AsyncIterator[None]:
    """Worker execution chosen, as at the start-up of a server or worker that has it
    (the tests run the worker's task in-process)."""
    settings.STUDIO_RUN_EXECUTION = "worker"
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    forget_task_backends()
    runs.configure()
    yield
    await runs.executor().aclose()
    settings.STUDIO_RUN_EXECUTION = "inline"
    runs.configure()
    forget_task_backends()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: Client, **headers: str) -> Samples:
    """``GET /metrics`` as ``client``: each sample's value by its name and labels."""
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    found: Samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found
