"""STUDIO_ENV=production: `check --deploy` passes, every page carries the security
headers, cookies are Secure, HttpOnly and SameSite=Lax, plain HTTP is redirected, and
unsafe configurations refuse to start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
HOST = "studio.example.com"


def production_env(data_dir: Path, **extra: str) -> dict[str, str]:
    # A fresh SQLite database in data_dir, whatever database and layer this run uses.
    ours = ("STUDIO_", "DJANGO_", "DATABASE_URL", "REDIS_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    return env | {
        "STUDIO_ENV": "production",
        "STUDIO_DATA_DIR": str(data_dir),
        "STUDIO_SECRET_KEY": "k" + Fernet.generate_key().decode() * 2,
        "STUDIO_FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "STUDIO_ALLOWED_HOSTS": HOST,
        "STUDIO_CSRF_TRUSTED_ORIGINS": f"https://{HOST}",
        "PROBE_HOST": HOST,
        **extra,
    }


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env = production_env(tmp_path_factory.mktemp("production"))
    migrated = run(env, "manage.py", "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    probed = run(env, str(ROOT / "tests/security/production_probe.py"))
    assert probed.returncode == 0, probed.stderr
    return dict(json.loads(probed.stdout.strip().splitlines()[-1]))


def test_check_deploy_passes_at_warning_level(tmp_path: Path) -> None:
    checked = run(
        production_env(tmp_path), "manage.py", "check", "--deploy", "--fail-level", "WARNING"
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no issues" in checked.stdout


def test_every_page_carries_the_security_headers(probe: dict[str, Any]) -> None:
    pages = probe["pages"]
    assert len(pages) >= 15
    for path, page in pages.items():
        headers = page["headers"]
        assert page["status"] in {200, 404}, (path, page["status"])
        assert headers["Strict-Transport-Security"] == (
            "max-age=31536000; includeSubDomains; preload"
        ), path
        assert headers["X-Content-Type-Options"] == "nosniff", path
        assert headers["Referrer-Policy"] == "same-origin", path
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin", path
        assert headers["X-Frame-Options"] == "DENY", path
        csp = headers["Content-Security-Policy"]
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, path
        assert "frame-ancestors 'none'" in csp, path
        script_src = next(d for d in csp.split("; ") if d.startswith("script-src ")).split()[1:]
        assert all(s == "'self'" or s.startswith("'nonce-") for s in script_src), path
    # Django adds the nonce to the policy of the pages whose templates use it.
    assert sum("'nonce-" in p["headers"]["Content-Security-Policy"] for p in pages.values()) > 5


def test_the_404_page_shows_no_debug_information(probe: dict[str, Any]) -> None:
    assert probe["pages"]["/no-such-page/"]["status"] == 404


def test_cookies_are_secure_httponly_and_samesite_lax(probe: dict[str, Any]) -> None:
    assert probe["login"]["status"] == 302
    cookies = probe["login"]["cookies"]
    assert set(cookies) >= {"sessionid", "csrftoken"}
    for name, cookie in cookies.items():
        attributes = {part.strip().split("=")[0].lower(): part for part in cookie.split(";")}
        assert "secure" in attributes, name
        assert "httponly" in attributes, name
        assert attributes["samesite"].strip() == "SameSite=Lax", name


def test_plain_http_is_redirected_to_https(probe: dict[str, Any]) -> None:
    assert probe["plain_http"]["status"] == 301
    assert probe["plain_http"]["location"].startswith(f"https://{HOST}/")


@pytest.mark.parametrize(
    ("extra", "complaint"),
    [
        ({"STUDIO_DEBUG": "1"}, "STUDIO_DEBUG"),
        ({"STUDIO_ALLOWED_HOSTS": "*"}, "STUDIO_ALLOWED_HOSTS"),
        ({"STUDIO_ALLOWED_HOSTS": ""}, "STUDIO_ALLOWED_HOSTS"),
        ({"STUDIO_CSRF_TRUSTED_ORIGINS": f"http://{HOST}"}, "https://"),
        ({"STUDIO_SECRET_KEY": "short"}, "STUDIO_SECRET_KEY"),
        ({"STUDIO_SECRET_KEY": ""}, "STUDIO_SECRET_KEY"),
        ({"STUDIO_FIELD_ENCRYPTION_KEYS": ""}, "STUDIO_FIELD_ENCRYPTION_KEYS"),
    ],
)
def test_an_unsafe_production_configuration_refuses_to_start(
    tmp_path: Path, extra: dict[str, str], complaint: str
) -> None:
    checked = run(production_env(tmp_path, **extra), "manage.py", "check")
    assert checked.returncode != 0
    assert "ImproperlyConfigured" in checked.stderr and complaint in checked.stderr
