"""The skills page: the signed-in user's skills, uploaded as a zip or a folder, viewed
(the ``SKILL.md`` body and every file shown as text, never as HTML) and deleted."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents_core import skills as core_skills
from studio import services, skills
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import Skill
from studio.skills.archive import MAX_ARCHIVE_BYTES


def _owner(request: HttpRequest) -> AbstractBaseUser:
    return request.user  # type: ignore[return-value]  # login_required: a real user


@login_required
@require_http_methods(["GET", "POST"])
def skill_list(request: HttpRequest) -> HttpResponse:
    """The skills, and (``POST``) an upload."""
    if request.method == "POST":
        return _upload_and_show(request)
    context = {
        "section": "skills",
        "skills": skills.latest_versions(request.user.pk),
        "max_files": core_skills.MAX_FILES,
        # As the limit is checked: bytes, not binary kilobytes ("976.6 KB")
        "max_size": f"{core_skills.MAX_TOTAL_BYTES:,} bytes",
    }
    return render(request, "studio/skill_list.html", context)


def _upload_and_show(request: HttpRequest) -> HttpResponse:
    """A zip (``archive``) or a folder (``files`` with their ``paths``, which the page's
    script fills in from the browser's relative paths)."""
    try:
        saved = _upload(request)
    except InvalidInputError as exc:
        messages.error(request, f"Upload refused: {exc.problems[0].message}")
        return redirect("skills")
    messages.success(request, f"Uploaded {saved.name} version {saved.version}.")
    return redirect("skill", saved.name)


def _upload(request: HttpRequest) -> Skill:
    archive = request.FILES.get("archive")
    files = request.FILES.getlist("files")
    paths = request.POST.getlist("paths")
    if archive is not None and not files:
        if archive.size is None or archive.size > MAX_ARCHIVE_BYTES:
            raise _refused("archive", f"an archive may be at most {MAX_ARCHIVE_BYTES} bytes")
        return services.upload_skill_zip(_owner(request), archive.read())
    if archive is None and files:
        if len(paths) != len(files):
            raise _refused("files", "each file needs its path inside the folder")
        pairs = ((path, file.read()) for path, file in zip(paths, files, strict=True))
        return services.upload_skill_folder(_owner(request), pairs)
    raise _refused("archive", "choose a zip archive or a folder")


def _refused(field: str, message: str) -> InvalidInputError:
    return InvalidInputError(field, [Problem((), "invalid", message)])


@login_required
@require_GET
def skill_detail(request: HttpRequest, name: str) -> HttpResponse:
    versions = _versions(request, name)
    wanted = request.GET.get("version", "")
    shown = next((v for v in versions if str(v.version) == wanted), versions[0])
    context = {
        "section": "skills",
        "skill": shown,
        "versions": versions,
        "files": list(shown.files.all()),
        "users": skills.users_of(_owner(request), name),
    }
    return render(request, "studio/skill_detail.html", context)


@login_required
@require_POST
def skill_delete(request: HttpRequest, name: str) -> HttpResponse:
    _versions(request, name)
    try:
        count = services.delete_skill(_owner(request), name)
    except ConflictError as exc:
        messages.error(request, exc.message)
        return redirect("skill", name)
    messages.success(request, f"Deleted skill {name} ({count} versions).")
    return redirect("skills")


def _versions(request: HttpRequest, name: str) -> list[Skill]:
    found = skills.versions(request.user.pk, name)
    if not found:
        raise Http404("no such skill")
    return found
