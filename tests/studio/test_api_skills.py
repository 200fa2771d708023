"""Skills through the API and through runs: uploaded as a zip or a folder, refused whole
when hostile (path traversal, symlinks, zip bombs, too many files, bad SKILL.md),
owner-scoped, pinned by agent versions, and loaded by an agent's load_skill tool."""

from __future__ import annotations

import io
import re
import stat
import zipfile
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from agents_core import skills as core_skills
from studio import services
from studio.api.schema import NOT_BLANK, SPACE
from studio.models import AgentVersion, Event, ModelConfig, RunStatus, Skill, SkillFile
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, make_agent, make_session

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/skills/"
SKILL_MD = (
    "---\nname: tea-brewing\ndescription: Brew <b>tea</b>; use for tea questions.\n---\n"
    "# Brew\n<script>alert(1)</script> Read steps.md.\n"
)


def make_zip(entries: dict[str, bytes | str], *, links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            info = zipfile.ZipInfo(name)
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, content, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def upload_zip(user: User, data: bytes) -> Any:
    archive = SimpleUploadedFile("skill.zip", data, content_type="application/zip")
    return client_for(user).post(URL, {"archive": archive}, format="multipart")


def good_zip(md: str = SKILL_MD) -> bytes:
    return make_zip({"tea/SKILL.md": md, "tea/steps.md": "1. Boil water.", "tea/d/x.txt": "x"})


def test_a_zip_becomes_a_skill_and_each_upload_a_new_version(ada: User) -> None:
    created = upload_zip(ada, good_zip())
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["name"], body["version"]) == ("tea-brewing", 1)
    assert body["description"] == "Brew <b>tea</b>; use for tea questions."
    assert body["body"] == "# Brew\n<script>alert(1)</script> Read steps.md."
    assert [f["path"] for f in body["files"]] == ["d/x.txt", "steps.md"]
    assert upload_zip(ada, good_zip(SKILL_MD + "More.\n")).json()["version"] == 2
    listed = client_for(ada).get(URL).json()
    assert [(s["name"], s["version"]) for s in listed] == [("tea-brewing", 2)]
    versions = client_for(ada).get(f"{URL}tea-brewing/").json()
    assert [v["version"] for v in versions] == [2, 1]


def test_a_folder_uploads_with_its_relative_paths(ada: User) -> None:
    files = [
        SimpleUploadedFile("SKILL.md", SKILL_MD.encode()),
        SimpleUploadedFile("steps.md", b"1. Boil water."),
    ]
    paths = ["tea/SKILL.md", "tea/sub/steps.md"]
    created = client_for(ada).post(URL, {"files": files, "paths": paths}, format="multipart")
    assert created.status_code == 201, created.content
    assert [f["path"] for f in created.json()["files"]] == ["sub/steps.md"]
    mismatched = client_for(ada).post(
        URL, {"files": [SimpleUploadedFile("a", b"a")], "paths": []}, format="multipart"
    )
    assert mismatched.status_code == 400
    assert mismatched.json()["detail"] == "paths: give one path for each file"


HOSTILE = {
    "traversal": (make_zip({"SKILL.md": SKILL_MD, "../evil.md": "x"}), "'..'"),
    "deep traversal": (make_zip({"SKILL.md": SKILL_MD, "a/../../evil": "x"}), "'..'"),
    "absolute": (make_zip({"SKILL.md": SKILL_MD, "/etc/cron.d/x": "x"}), "absolute"),
    "backslash": (make_zip({"SKILL.md": SKILL_MD, "..\\evil": "x"}), "may not contain '\\'"),
    "symlink": (
        make_zip({"SKILL.md": SKILL_MD, "link": "/etc/passwd"}, links=("link",)),
        "symbolic link",
    ),
    "bomb": (
        make_zip({"SKILL.md": SKILL_MD, "zeros": b"\0" * (core_skills.MAX_TOTAL_BYTES + 1)}),
        "uncompressed",
    ),
    "many files": (
        make_zip({"SKILL.md": SKILL_MD} | {f"{i}.md": "x" for i in range(core_skills.MAX_FILES)}),
        "at most",
    ),
    "binary": (make_zip({"SKILL.md": SKILL_MD, "x.bin": b"\xff\xfe\x00"}), "UTF-8"),
    "no front matter": (make_zip({"SKILL.md": "# just a body"}), "front matter"),
    "bad name": (make_zip({"SKILL.md": SKILL_MD.replace("tea-brewing", "Tea Brewing")}), "name"),
    "no description": (
        make_zip({"SKILL.md": "---\nname: tea-brewing\n---\nbody"}),
        "description",
    ),
    "no SKILL.md": (make_zip({"README.md": "hi"}), "SKILL.md"),
    "not a zip": (b"PK\x03\x04 not really", "not a zip"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_archives_are_refused_with_a_reason_and_nothing_stored(
    ada: User, case: str
) -> None:
    data, reason = HOSTILE[case]
    refused = upload_zip(ada, data)
    assert refused.status_code == 400
    body = refused.json()
    assert body["detail"].startswith("archive: ") and reason in body["detail"]
    assert Skill.objects.count() == SkillFile.objects.count() == 0


def test_an_entry_that_lies_about_its_size_is_caught_while_inflating(ada: User) -> None:
    data = bytearray(make_zip({"SKILL.md": SKILL_MD, "big.md": "y" * 5000}))
    # Shrink the central directory's uncompressed size of big.md to 10 bytes.
    central = data.rfind(b"PK\x01\x02")  # big.md is the last entry
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    refused = upload_zip(ada, bytes(data))
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("archive: 'big.md'")
    assert Skill.objects.count() == 0


def test_another_users_skill_is_not_found_and_stays(ada: User, bob: User) -> None:
    upload_zip(ada, good_zip())
    bob_client = client_for(bob)
    assert bob_client.get(URL).json() == []
    assert bob_client.get(f"{URL}tea-brewing/").status_code == 404
    assert bob_client.delete(f"{URL}tea-brewing/").status_code == 404
    assert Skill.objects.filter(owner=ada).count() == 1
    assert client_for(ada).delete(f"{URL}tea-brewing/").status_code == 204
    assert Skill.objects.count() == SkillFile.objects.count() == 0


def test_an_agent_version_pins_its_skill_and_keeps_it_from_being_deleted(ada: User) -> None:
    upload_zip(ada, good_zip())
    agent = make_agent(ada, skills=[{"name": "tea-brewing"}])
    version = AgentVersion.objects.get(agent=agent)
    assert version.spec["skills"] == [{"name": "tea-brewing", "version": 1}]
    conflict = client_for(ada).delete(f"{URL}tea-brewing/")
    assert conflict.status_code == 409 and "helper" in conflict.json()["detail"]
    with pytest.raises(Exception, match="no skill 'nope'"):
        make_agent(ada, name="other", skills=[{"name": "nope"}])


def test_the_schema_documents_the_skills_api(ada: User) -> None:
    schema = client_for(ada).get("/api/schema/", {"format": "json"}).json()
    assert {"/api/skills/", "/api/skills/{name}/"} <= set(schema["paths"])


def test_a_path_the_api_strips_to_blank_is_one_the_schema_refuses(ada: User) -> None:
    r"""The fuzzer sent the path "\x1f": it met the schema's "not blank" pattern as a JSON
    Schema's \s reads it, and the serializer refused it as blank. The pattern names the
    characters the serializer strips, so no engine's \s decides."""
    schema = client_for(ada).get("/api/schema/", {"format": "json"}).json()
    upload = schema["components"]["schemas"]["SkillUploadRequest"]["properties"]
    pattern = upload["paths"]["items"]["pattern"]
    assert pattern == NOT_BLANK and "\\s" not in pattern
    text = re.compile(f"[^\\x00{SPACE}]")  # a character that keeps a text from blank
    disagree = [c for c in map(chr, range(0x110000)) if bool(text.fullmatch(c)) == c.isspace()]
    assert disagree == ["\x00"]  # NUL: neither space nor allowed
    assert re.fullmatch(pattern, "\x1f") is None and re.fullmatch(pattern, "a\x1f")
    folder = {"files": [SimpleUploadedFile("SKILL.md", b"x")], "paths": ["\x1f"]}
    response = client_for(ada).post(URL, folder, format="multipart")
    assert (response.status_code, response.json()["errors"][0]["code"]) == (400, "blank")


async def test_a_run_lists_the_skill_up_front_and_loads_body_and_file_on_demand(
    ada: User,
) -> None:
    def setup() -> Any:
        upload_zip(ada, good_zip())
        make_agent(ada, skills=[{"name": "tea-brewing"}])
        script = [
            {"tool_calls": [{"name": "load_skill", "args": {"name": "tea-brewing"}}]},
            {
                "tool_calls": [
                    {"name": "read_skill_file", "args": {"name": "tea-brewing", "path": "steps.md"}}
                ]
            },
            {
                "tool_calls": [
                    {"name": "read_skill_file", "args": {"name": "tea-brewing", "path": "../../x"}}
                ]
            },
            {"text": "Done."},
        ]
        ModelConfig.objects.filter(owner=ada).update(options={"script": script})
        return make_session(ada)

    session = await sync_to_async(setup)()
    run = await sync_to_async(services.start_run)(session, "How do I brew tea?")
    finished = await execute_run(run)
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    results = [
        part
        async for e in Event.objects.filter(session=session, type="tool_response")
        for part in e.payload["parts"]
    ]
    assert results[0]["result"].startswith("# Brew\n<script>alert(1)</script> Read steps.md.")
    assert (results[1]["result"], results[1]["is_error"]) == ("1. Boil water.", False)
    assert results[2]["is_error"] and "'..'" in results[2]["result"]
