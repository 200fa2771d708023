"""The prompt templates page: the signed-in user's templates, a new one, and one
template's versions with a form that previews a text against sample state and saves it
as the next version. Rendered output is shown as text, never as markup."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents_core import prompts as core_prompts
from agents_core.specs import NAME_PATTERN, NAME_RULE
from studio import prompts, services
from studio.errors import ConflictError, InvalidInputError
from studio.models import PromptTemplate

MAX_STATE_CHARS = 100_000


class TemplateForm(forms.Form):
    name = forms.RegexField(
        regex=NAME_PATTERN,
        max_length=64,
        error_messages={"invalid": NAME_RULE},
        help_text='Agent specs name it: {"instruction_template": {"name": "<name>"}}.',
    )
    source = forms.CharField(
        label="Template",
        strip=False,
        max_length=core_prompts.MAX_SOURCE_CHARS,
        widget=forms.Textarea(attrs={"rows": 12, "class": "code", "spellcheck": "false"}),
        help_text="Jinja: {{ key }} is a session state value, {% if %} and {% for %} work; "
        "it runs in a sandbox.",
    )
    description = forms.CharField(max_length=200, required=False, label="What changed")
    sample_state = forms.CharField(
        label="Sample state (JSON)",
        required=False,
        max_length=MAX_STATE_CHARS,
        initial="{}",
        widget=forms.Textarea(attrs={"rows": 4, "class": "code", "spellcheck": "false"}),
        help_text="Used by Preview only; never saved.",
    )

    def clean_sample_state(self) -> dict[str, Any]:
        text = self.cleaned_data["sample_state"].strip() or "{}"
        try:
            state = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from None
        if not isinstance(state, dict):
            raise forms.ValidationError("a JSON object, like the session state")
        return state


def _owner(request: HttpRequest) -> AbstractBaseUser:
    return request.user  # type: ignore[return-value]  # login_required: a real user


@login_required
@require_GET
def template_list(request: HttpRequest) -> HttpResponse:
    latest = prompts.latest_versions(request.user.pk)
    return render(request, "studio/prompt_list.html", {"section": "prompts", "templates": latest})


@login_required
@require_http_methods(["GET", "POST"])
def template_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    versions = _versions(request, name) if name else []
    initial = {"name": name, "source": versions[0].source} if versions else {}
    data = request.POST.copy() if request.method == "POST" else None
    if data is not None and name:
        data["name"] = name  # a template's page saves that template's versions only
    form = TemplateForm(data, initial=initial)
    preview = None
    if form.is_valid():
        cleaned = form.cleaned_data
        try:
            if "preview" in request.POST:
                preview = services.preview_template(cleaned["source"], cleaned["sample_state"])
            else:
                saved = services.save_template(
                    _owner(request), cleaned["name"], cleaned["source"], cleaned["description"]
                )
                messages.success(request, f"Saved {saved.name} version {saved.version}.")
                return redirect("prompt-template", saved.name)
        except InvalidInputError as exc:
            form.add_error("source", exc.message.removeprefix("source: "))
    context = {"section": "prompts", "name": name, "versions": versions, "form": form}
    status = 400 if form.is_bound and form.errors else 200
    return render(
        request, "studio/prompt_edit.html", {**context, "preview": preview}, status=status
    )


@login_required
@require_POST
def template_delete(request: HttpRequest, name: str) -> HttpResponse:
    _versions(request, name)
    try:
        count = services.delete_template(_owner(request), name)
    except ConflictError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted template {name} ({count} versions).")
    return redirect("prompt-templates")


def _versions(request: HttpRequest, name: str) -> list[PromptTemplate]:
    found = prompts.versions(request.user.pk, name)
    if not found:
        raise Http404("no such template")
    return found
