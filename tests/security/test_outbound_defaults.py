"""What outbound requests may reach by default, per configuration, each probed in a
subprocess of its own (settings are read once, at start-up): the embedded default
(`make run`: SQLite, in-memory layer, not production, served to loopback) admits a
model server on loopback and says so; scaled out and in production it is refused, and
the refusal names the setting that would allow it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_production_settings import production_env, run

ROOT = Path(__file__).resolve().parents[2]
PROBE = str(ROOT / "tests/security/outbound_probe.py")
LOOPBACK = ["127.0.0.0/8", "::1", "localhost"]


def embedded_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """`make run`'s environment: none of Studio's variables, whatever this run uses."""
    ours = ("STUDIO_", "DJANGO_", "DATABASE_URL", "REDIS_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    return env | {"STUDIO_DATA_DIR": str(data_dir), **extra}


def probe(env: dict[str, str], *args: str) -> dict[str, Any]:
    probed = run(env, PROBE, *args)
    assert probed.returncode == 0, probed.stderr
    return dict(json.loads(probed.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return probe(embedded_env(tmp_path_factory.mktemp("embedded")))


def test_the_embedded_default_admits_a_model_server_on_loopback(embedded: dict[str, Any]) -> None:
    seen = embedded
    assert seen["allowlist"] == LOOPBACK
    assert seen["create"]["status"] == 201, seen["create"]
    assert seen["test"]["ok"] is True, seen["test"]
    assert seen["test"]["code"] == "ok"
    assert seen["stored_test"]["ok"] is True, seen["stored_test"]
    assert seen["requests"] == 2  # both tests reached the real server
    assert "embedded default" in seen["policy_line"]
    assert "STUDIO_OUTBOUND_ALLOWLIST=" in seen["policy_line"]
    assert "loopback" in seen["form_policy"] and "embedded default" in seen["form_policy"]


def test_the_embedded_default_still_refuses_private_and_metadata_addresses(
    embedded: dict[str, Any],
) -> None:
    seen = embedded
    assert "private-network address" in seen["private"]
    assert "link-local address" in seen["metadata"]
    for refusal in (seen["private"], seen["metadata"]):
        assert "STUDIO_OUTBOUND_ALLOWLIST" in refusal


@pytest.mark.parametrize("configuration", ["scaled", "production"])
def test_scaled_and_production_settings_refuse_a_loopback_model_naming_the_setting(
    tmp_path: Path, configuration: str
) -> None:
    if configuration == "scaled":
        env = embedded_env(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path / 'scaled.sqlite3'}")
    else:
        env = production_env(tmp_path)
    seen = probe(env)
    assert seen["allowlist"] == []
    assert seen["policy_line"] is None
    assert seen["create"]["status"] == 400
    [error] = seen["create"]["body"]["errors"]
    assert error["path"] == "base_url"
    assert "loopback" in error["detail"] and "STUDIO_OUTBOUND_ALLOWLIST" in error["detail"]
    assert seen["test"] is None
    stored = seen["stored_test"]
    assert (stored["ok"], stored["code"]) == (False, "address_refused")
    assert "STUDIO_OUTBOUND_ALLOWLIST" in stored["detail"]
    assert seen["requests"] == 0  # nothing, not even a connection test, reached it
    assert "refused unless" in seen["form_policy"]


@pytest.mark.parametrize(
    ("extra", "allowlist"),
    [
        ({"STUDIO_OUTBOUND_ALLOWLIST": ""}, []),  # the operator refuses loopback
        ({"STUDIO_OUTBOUND_ALLOWLIST": "ollama.internal"}, ["ollama.internal"]),
        ({"STUDIO_ALLOWED_HOSTS": "studio.lan"}, []),  # served to others than loopback
        ({"REDIS_URL": "redis://127.0.0.1:1/0"}, []),  # scaled out
    ],
)
def test_only_the_embedded_default_admits_loopback_by_default(
    tmp_path: Path, extra: dict[str, str], allowlist: list[str]
) -> None:
    seen = probe(embedded_env(tmp_path, **extra), "--settings")
    assert seen["allowlist"] == allowlist
    assert seen["policy_line"] is None or "embedded default" not in seen["policy_line"]
