"""Fixtures for the Django side: users, API clients, and stored objects."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.test import APIClient

from studio import runs, services
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


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    """Throttle counters live in the cache: one test's requests never throttle another's."""
    cache.clear()


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
