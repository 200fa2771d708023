"""The skills page: signed-in owners only, uploads of a zip or a folder (refused whole,
with the reason shown), SKILL.md and files shown as text, delete refused while an agent
attaches the skill."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agents_core import skills as core_skills
from studio.models import Skill, SkillFile
from tests.studio.conftest import make_agent, signed_in
from tests.studio.test_api_skills import SKILL_MD, good_zip, make_zip

pytestmark = pytest.mark.django_db

LIST = "/skills/"


def _zip(data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile("skill.zip", data, content_type="application/zip")


def test_the_page_needs_a_signed_in_user(ada: User) -> None:
    assert Client().get(LIST).status_code == 302
    assert Client().post(LIST, {"archive": _zip(good_zip())}).status_code == 302
    assert Skill.objects.count() == 0


def test_the_page_states_the_size_limit_as_it_is_checked(ada: User) -> None:
    page = signed_in(ada).get(LIST).content.decode()
    assert f"{core_skills.MAX_TOTAL_BYTES:,} bytes in all" in page  # not "976.6 KB"
    too_big = make_zip({"SKILL.md": SKILL_MD, "zeros": "0" * core_skills.MAX_TOTAL_BYTES})
    refused = signed_in(ada).post(LIST, {"archive": _zip(too_big)}, follow=True)
    assert f"at most {core_skills.MAX_TOTAL_BYTES:,} bytes uncompressed" in refused.content.decode()


def test_a_zip_upload_shows_the_skill_as_text(ada: User) -> None:
    client = signed_in(ada)
    uploaded = client.post(LIST, {"archive": _zip(good_zip())}, follow=True)
    page = uploaded.content.decode()
    assert "Uploaded tea-brewing version 1." in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "Brew &lt;b&gt;tea&lt;/b&gt;" in page
    assert "1. Boil water." in page and "d/x.txt" in page
    listed = client.get(LIST).content.decode()
    assert 'data-skill="tea-brewing"' in listed and "<b>tea</b>" not in listed


def test_a_folder_upload_keeps_the_paths_the_script_sends(ada: User) -> None:
    files = [SimpleUploadedFile("SKILL.md", SKILL_MD.encode()), SimpleUploadedFile("a.md", b"A")]
    signed_in(ada).post(LIST, {"files": files, "paths": ["tea/SKILL.md", "tea/sub/a.md"]})
    assert list(SkillFile.objects.values_list("path", flat=True)) == ["sub/a.md"]


def test_a_hostile_upload_shows_why_and_stores_nothing(ada: User) -> None:
    client = signed_in(ada)
    evil = make_zip({"SKILL.md": SKILL_MD, "../../evil": "x"})
    page = client.post(LIST, {"archive": _zip(evil)}, follow=True).content.decode()
    assert "Upload refused: &#x27;../../evil&#x27;: a path may not have" in page
    files = [SimpleUploadedFile("SKILL.md", SKILL_MD.encode())]
    page = client.post(LIST, {"files": files}, follow=True).content.decode()
    assert "each file needs its path inside the folder" in page
    assert Skill.objects.count() == SkillFile.objects.count() == 0


def test_another_users_skill_is_not_found_and_one_in_use_is_kept(ada: User, bob: User) -> None:
    signed_in(ada).post(LIST, {"archive": _zip(good_zip())})
    assert signed_in(bob).get(f"{LIST}tea-brewing/").status_code == 404
    assert signed_in(bob).post(f"{LIST}tea-brewing/delete/").status_code == 404
    make_agent(ada, skills=[{"name": "tea-brewing"}])
    page = signed_in(ada).post(f"{LIST}tea-brewing/delete/", follow=True).content.decode()
    assert "is attached by: helper" in page
    assert Skill.objects.count() == 1
