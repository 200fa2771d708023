"""The provider API key: encrypted at rest, rotatable, and never shown anywhere."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from studio import crypto
from studio.conf import env_fernet_keys
from studio.models import ModelConfig
from tests.support.openai_server import QUOTED_KEY, OpenAIServer

pytestmark = pytest.mark.django_db

KEY = "sk-secret-PLAINTEXT-4242-abcdefghijkl"


@pytest.fixture
def stored(api: APIClient) -> dict[str, Any]:
    body = api.post(
        "/api/models/",
        {"name": "prod", "provider": "openai_compatible", "model": "m", "api_key": KEY},
    ).json()
    return dict(body)


def test_the_plaintext_key_is_absent_from_a_dumpdata_export(stored: dict[str, Any]) -> None:
    out = io.StringIO()
    call_command("dumpdata", "studio", stdout=out)
    dump = out.getvalue()
    assert stored["id"] in dump
    assert KEY not in dump
    assert ModelConfig.objects.get().api_key_ciphertext in dump


def test_the_plaintext_key_is_absent_from_the_table_read_with_raw_sql(
    stored: dict[str, Any],
) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM studio_modelconfig")
        rows = cursor.fetchall()
    assert len(rows) == 1
    assert not any(KEY in str(value) for value in rows[0])


def test_the_key_never_reaches_a_log_line_even_at_debug_level(
    api: APIClient, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    settings.DEBUG = True  # Django logs every SQL statement with its parameters
    caplog.set_level(logging.DEBUG)
    for name in ("django", "django.db.backends", "httpx", "httpcore", "openai", "langchain"):
        caplog.set_level(logging.DEBUG, logger=name)
    with OpenAIServer() as server:
        server.reply("ok")
        created = api.post(
            "/api/models/",
            {
                "name": "logged",
                "provider": "openai_compatible",
                "model": "m",
                "base_url": server.base_url,
                "api_key": KEY,
            },
        ).json()
        url = f"/api/models/{created['id']}/"
        api.get("/api/models/")
        api.get(url)
        api.patch(url, {"api_key": KEY + "-rotated"})
        api.post(f"{url}test/")
        server.fail(401, message=f"Incorrect API key provided: {QUOTED_KEY}")
        api.post(f"{url}test/")
        assert server.pending == 0  # both tests reached the server
    lines = [f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records]
    assert any("INSERT INTO" in line and "studio_modelconfig" in line for line in lines)
    assert any("openai" in line or "httpx" in line or "httpcore" in line for line in lines)
    assert not [line for line in lines if KEY in line]


def test_keys_rotate_old_ones_still_decrypt_and_reencrypting_moves_to_the_new_key(
    settings: Any, ada: Any
) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    config = ModelConfig(owner=ada, name="m", provider="openai_compatible", model="m")
    config.set_api_key(KEY)
    config.save()
    before = config.api_key_ciphertext

    settings.FIELD_ENCRYPTION_KEYS = [new, old]
    assert ModelConfig.objects.get().api_key() == KEY
    out = io.StringIO()
    call_command("reencrypt_api_keys", stdout=out)
    assert "re-encrypted 1 API key" in out.getvalue()
    after = ModelConfig.objects.get().api_key_ciphertext
    assert after != before

    settings.FIELD_ENCRYPTION_KEYS = [new]
    assert ModelConfig.objects.get().api_key() == KEY
    settings.FIELD_ENCRYPTION_KEYS = [old]
    with pytest.raises(crypto.DecryptionError):
        ModelConfig.objects.get().api_key()


def test_reencrypting_with_a_missing_old_key_fails_loudly(settings: Any, ada: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    config = ModelConfig(owner=ada, name="m", provider="scripted")
    config.set_api_key(KEY)
    config.save()
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(Exception, match="cannot re-encrypt"):
        call_command("reencrypt_api_keys", stdout=io.StringIO())


def test_a_malformed_encryption_key_in_the_environment_fails_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STUDIO_FIELD_ENCRYPTION_KEYS", f"{Fernet.generate_key().decode()},nope")
    with pytest.raises(ImproperlyConfigured, match="key #2 is not a Fernet key"):
        env_fernet_keys("STUDIO_FIELD_ENCRYPTION_KEYS")


def test_the_encryption_key_is_not_the_secret_key(settings: Any) -> None:
    assert settings.SECRET_KEY not in settings.FIELD_ENCRYPTION_KEYS


def test_processes_starting_together_on_a_new_data_directory_agree_on_its_keys(
    tmp_path: Path,
) -> None:
    """Two Daphnes (or test workers) started at once on a new data directory must use
    one secret key and one encryption key, else each rejects the other's sessions and
    cannot decrypt what the other stored."""
    probe = (
        "import sys; from pathlib import Path; from studio.conf import dev_fernet_key, "
        "dev_secret; d = Path(sys.argv[1]); "
        "print(dev_secret(d / 'secret_key'), dev_fernet_key(d / 'field_encryption_key'))"
    )
    started = [
        subprocess.Popen(
            [sys.executable, "-c", probe, str(tmp_path / "data")],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    printed = {process.communicate(timeout=60)[0].strip() for process in started}
    secret, key = (tmp_path / "data" / name for name in ("secret_key", "field_encryption_key"))
    assert printed == {f"{secret.read_text()} {key.read_text()}"}
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [key.name, secret.name]
    assert secret.stat().st_mode & 0o077 == 0
