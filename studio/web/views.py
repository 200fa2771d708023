"""Server-rendered pages. Each page renders its shell and the data its script needs
(through ``json_script``); writes go through the REST API, so the pages and API clients
share one set of validation rules and error shapes. The few form posts here (delete,
duplicate) call ``studio.services`` like the API does."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import ValidationError

from agents_core import specs as core_specs
from studio import prompts, security, services, skills
from studio.agents.hooks import hook_registry
from studio.agents.model_presets import CUSTOM_NOTE, PRESETS, default_base_url, preset_for
from studio.agents.tools import tool_registry
from studio.api import serializers as s
from studio.api.exceptions import error_body
from studio.errors import ConflictError, InvalidInputError
from studio.models import Agent, McpServer, ModelConfig
from studio.web.forms import AgentSearchForm
from studio.web.model_options import option_fields
from studio.web.owned import agent_summary, owned_agents, owned_sessions, uuid_or_none


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


# Home


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    agents = [agent_summary(agent) for agent in owned_agents(request)]
    sessions = owned_sessions(request).defer("state").order_by("-updated_at")[:6]
    return render(
        request,
        "studio/home.html",
        {"section": "home", "agents": agents, "sessions": sessions},
    )


# Agents


@login_required
@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    search = AgentSearchForm(request.GET)
    agents = [agent_summary(a) for a in search.filter(owned_agents(request))]
    return render(
        request,
        "studio/agent_list.html",
        {"section": "agents", "agents": agents, "search": search},
    )


@login_required
@require_GET
def agent_builder(request: HttpRequest, pk: UUID | None = None) -> HttpResponse:
    agent = get_object_or_404(owned_agents(request), pk=pk) if pk else None
    context = {
        "section": "agents",
        "agent": agent,
        "title": agent.name if agent else "New agent",
        "builder_data": _builder_data(request, agent),
    }
    return render(request, "studio/agent_builder.html", context)


def _builder_data(request: HttpRequest, agent: Agent | None) -> dict[str, Any]:
    """What the builder's script offers: the owner's models, MCP servers and other agents,
    the registered tools, and the rules and defaults of a spec in words."""
    others = {
        a.name: a.spec for a in owned_agents(request) if a.spec and (agent is None or a != agent)
    }
    servers = McpServer.objects.filter(owner_id=request.user.pk).order_by("name")
    return {
        "agent": s.AgentSerializer(agent).data if agent else None,
        "models": list(
            ModelConfig.objects.filter(owner_id=request.user.pk).values_list("name", flat=True)
        ),
        "tools": [
            {"name": e.name, "description": e.description, "settings_schema": e.settings_schema()}
            for e in tool_registry(request.user.pk)
        ],
        "hooks": [
            {"name": e.name, "description": e.description, "settings_schema": e.settings_schema()}
            for e in hook_registry()
        ],
        "mcp_servers": [
            {
                "name": server.name,
                "description": server.description,
                "transport": server.transport,
                "tools_url": reverse("mcpserver-test", args=[server.pk]),
            }
            for server in servers
        ],
        "agents": others,
        "templates": [
            {"name": t.name, "version": t.version} for t in prompts.latest_versions(request.user.pk)
        ],
        "skills": [
            {"name": k.name, "version": k.version, "description": k.description}
            for k in skills.latest_versions(request.user.pk)
        ],
        "rules": {
            "name": core_specs.NAME_RULE,
            "state_key": core_specs.STATE_KEY_RULE,
            "prefix": core_specs.PREFIX_RULE,
        },
        "defaults": {
            "approval": core_specs.ApprovalSpec().model_dump(mode="json"),
            "compaction": core_specs.CompactionSpec().model_dump(mode="json"),
            "output_retries": core_specs.AgentSpec.model_fields["output_retries"].default,
        },
        "urls": {
            "agents": reverse("agent-list"),
            "validate": reverse("agent-validate"),
            "builder": reverse("agent-new"),
            "playground": reverse("playground"),
            "mcp_servers": reverse("mcp-servers"),
            "prompt_templates": reverse("prompt-templates"),
            "skills": reverse("skills"),
            "prompt_preview": reverse("api-prompt-template-preview"),
        },
    }


@login_required
@require_POST
def agent_validate(request: HttpRequest) -> JsonResponse:
    """The builder's live check: the API's validation of an agent, without saving.
    Answers ``{"errors": [...]}`` in the API's error format (empty when valid)."""
    try:
        payload = json.loads(request.body)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        problem = {"path": "", "code": "invalid", "detail": "send a JSON object"}
        return JsonResponse({"errors": [problem]}, status=400)
    instance = None
    if (agent_id := uuid_or_none(payload.get("id"))) is not None:
        instance = owned_agents(request).filter(pk=agent_id).first()
    data = {k: payload[k] for k in ("name", "description", "spec") if k in payload}
    serializer = s.AgentSerializer(instance, data=data, context={"request": request})
    if serializer.is_valid():
        return JsonResponse({"errors": []})
    return JsonResponse({"errors": error_body(ValidationError(serializer.errors))["errors"]})


@login_required
@require_POST
def agent_duplicate(request: HttpRequest, pk: UUID) -> HttpResponse:
    agent = get_object_or_404(owned_agents(request), pk=pk)
    name = _free_name(request, agent.name)
    spec = {**(agent.spec or {}), "name": name}
    try:
        copy = services.create_agent(
            request.user,  # type: ignore[arg-type]  # login_required: a real user
            name=name,
            description=agent.description,
            spec=spec,
            note=f"duplicated from {agent.name}",
        )
    except InvalidInputError as exc:
        messages.error(request, f"Could not duplicate {agent.name}: {exc.message}")
        return redirect("agents")
    messages.success(request, f"Duplicated {agent.name} as {copy.name}.")
    return redirect("agent-edit", pk=copy.pk)


def _free_name(request: HttpRequest, name: str) -> str:
    taken = set(owned_agents(request).values_list("name", flat=True))
    for n in range(1, 1000):
        suffix = "_copy" if n == 1 else f"_copy{n}"
        candidate = f"{name[: 64 - len(suffix)]}{suffix}"
        if candidate not in taken:
            return candidate
    return f"{name[:50]}_{len(taken)}"


@login_required
@require_POST
def agent_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    agent = get_object_or_404(owned_agents(request), pk=pk)
    try:
        services.delete_agent(agent)
    except ConflictError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted agent {agent.name}.")
    return redirect("agents")


# Models


@login_required
@require_GET
def model_list(request: HttpRequest) -> HttpResponse:
    configs = ModelConfig.objects.filter(owner_id=request.user.pk)
    return render(request, "studio/model_list.html", {"section": "models", "configs": configs})


@login_required
@require_GET
def model_edit(request: HttpRequest, pk: UUID | None = None) -> HttpResponse:
    config = get_object_or_404(ModelConfig, owner_id=request.user.pk, pk=pk) if pk else None
    data = {
        "config": s.ModelConfigSerializer(config).data if config else None,
        "urls": {"models": reverse("modelconfig-list"), "list": reverse("models")},
        "presets": [preset.as_json() for preset in PRESETS],
        "option_fields": option_fields(),
    }
    preset = preset_for(config.provider, config.base_url) if config else None
    return render(
        request,
        "studio/model_edit.html",
        {
            "section": "models",
            "config": config,
            "providers": _provider_choices(),
            "presets": PRESETS,
            "preset": preset,
            "custom_note": CUSTOM_NOTE,
            "outbound_policy": security.policy_for_users(),
            "price_fields": _price_fields(config),
            "model_data": data,
        },
    )


_MODEL_PLACEHOLDERS: dict[str, str] = {
    ModelConfig.Provider.OPENAI_COMPATIBLE: "gpt-4o-mini",
    ModelConfig.Provider.ANTHROPIC: "claude-sonnet-4-5",
    ModelConfig.Provider.GEMINI: "gemini-2.5-flash",
    ModelConfig.Provider.OLLAMA: "llama3.2",
}


def _provider_choices() -> list[dict[str, str]]:
    """Each provider with the base URL it uses when none is given and a model name to
    show as an example (the form's placeholders follow the provider picked)."""
    return [
        {
            "value": value,
            "label": label,
            "base_url": default_base_url(value),
            "model": _MODEL_PLACEHOLDERS.get(value, ""),
        }
        for value, label in ModelConfig.Provider.choices
    ]


def _price_fields(config: ModelConfig | None) -> list[tuple[str, str, str]]:
    """The price inputs: name, label and the stored price without trailing zeros."""
    labels = {
        "price_input": "Input",
        "price_cached_input": "Cached input",
        "price_output": "Output",
    }
    return [
        (name, label, "" if value is None else f"{value.normalize():f}")
        for name, label in labels.items()
        for value in [getattr(config, name, None)]
    ]


@login_required
@require_POST
def model_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    config = get_object_or_404(ModelConfig, owner_id=request.user.pk, pk=pk)
    try:
        services.delete_model_config(config)
    except ConflictError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted model {config.name}.")
    return redirect("models")
