"""The admin of agents (versions read-only), model configurations (API keys write-only)
and MCP servers (secrets write-only)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from studio import costs
from studio.agents.llms import config_problem, in_words, option_problems
from studio.agents.prices import price_for
from studio.mcp import checks as mcp_checks
from studio.models import Agent, AgentVersion, McpServer, ModelConfig
from studio.services import PRICE_FIELDS

PRICE_AMOUNTS = ("price_input", "price_cached_input", "price_output")

# Django's admin and form classes are generic only in django-stubs, not at runtime.
if TYPE_CHECKING:
    AgentAdminBase = admin.ModelAdmin[Agent]
    ModelConfigAdminBase = admin.ModelAdmin[ModelConfig]
    TabularInlineBase = admin.TabularInline[Any, Any]
    ModelConfigFormBase = forms.ModelForm[ModelConfig]
    McpServerAdminBase = admin.ModelAdmin[McpServer]
    McpServerFormBase = forms.ModelForm[McpServer]
else:
    AgentAdminBase = ModelConfigAdminBase = admin.ModelAdmin
    TabularInlineBase = admin.TabularInline
    ModelConfigFormBase = McpServerFormBase = forms.ModelForm
    McpServerAdminBase = admin.ModelAdmin


def pretty_json(value: Any) -> SafeString:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


class ReadOnlyInline(TabularInlineBase):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# Agents


class AgentVersionInline(ReadOnlyInline):
    model = AgentVersion
    readonly_fields = ("number", "note", "content_hash", "created_at", "pretty_spec")
    fields = readonly_fields
    ordering = ["-number"]

    @admin.display(description="spec")
    def pretty_spec(self, version: AgentVersion) -> SafeString:
        return pretty_json(version.spec)


@admin.register(Agent)
class AgentAdmin(AgentAdminBase):
    list_display = ["name", "owner", "version_number", "updated_at"]
    list_select_related = ["owner", "current_version"]
    search_fields = ["name", "description", "owner__username"]
    fields = ["owner", "name", "description", "version_number", "pretty_spec"]
    readonly_fields = ["owner", "version_number", "pretty_spec"]
    inlines = [AgentVersionInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # an agent starts with a validated spec: create it through the API

    @admin.display(description="current version")
    def version_number(self, agent: Agent) -> int | None:
        return agent.current_version.number if agent.current_version else None

    @admin.display(description="current spec")
    def pretty_spec(self, agent: Agent) -> SafeString:
        return pretty_json(agent.spec)


# Model configs


class ModelConfigForm(ModelConfigFormBase):
    new_api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only: leave empty to keep the stored key.",
    )
    remove_api_key = forms.BooleanField(required=False)

    class Meta:
        model = ModelConfig
        fields = ["owner", "name", "provider", "base_url", "model", "options", *PRICE_FIELDS]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["price_currency"].required = False  # empty: the default, USD

    def clean_price_currency(self) -> str:
        return str(self.cleaned_data.get("price_currency") or costs.DEFAULT_CURRENCY)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        provider, options = cleaned.get("provider"), cleaned.get("options")
        if provider and isinstance(options, dict) and (found := option_problems(provider, options)):
            self.add_error("options", in_words(found))
        model, base_url = cleaned.get("model", ""), cleaned.get("base_url", "")
        if provider and (problem := config_problem(provider, model, base_url)) is not None:
            self.add_error(problem.field, problem.message)
        return cleaned

    def save(self, commit: bool = True) -> ModelConfig:
        adding = self.instance._state.adding
        config = super().save(commit=False)
        priced = any(self.cleaned_data.get(name) is not None for name in PRICE_AMOUNTS)
        if adding and not priced:  # as through the API: the price table's, if it has one
            config.set_price(price_for(config.provider, config.model))
        if self.cleaned_data.get("new_api_key"):
            config.set_api_key(self.cleaned_data["new_api_key"])
        elif self.cleaned_data.get("remove_api_key"):
            config.set_api_key("")
        if commit:
            config.save()
        return config


@admin.register(ModelConfig)
class ModelConfigAdmin(ModelConfigAdminBase):
    form = ModelConfigForm
    list_display = ["name", "owner", "provider", "model", "api_key_hint"]
    list_filter = ["provider"]
    search_fields = ["name", "model", "owner__username"]
    readonly_fields = ["api_key_hint"]
    fields = [
        "owner",
        "name",
        "provider",
        "base_url",
        "model",
        "options",
        *PRICE_FIELDS,
        "requests_per_minute",
        "tokens_per_minute",
        "api_key_hint",
        "new_api_key",
        "remove_api_key",
    ]


# MCP servers


def _secret_map_field(what: str) -> forms.JSONField:
    return forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text=f"Write-only: a JSON object of {what}, replacing the stored ones. "
        "Leave empty to keep them.",
    )


class McpServerForm(McpServerFormBase):
    """The API's rules, for staff: stdio needs a staff user (the admin site already
    requires one; checked again so a form reused elsewhere cannot skip it)."""

    new_headers = _secret_map_field("HTTP headers")
    remove_headers = forms.BooleanField(required=False)
    new_env = _secret_map_field("environment variables (STUDIO_MCP_ENV_ALLOWLIST only)")
    remove_env = forms.BooleanField(required=False)
    request_user: Any = None

    class Meta:
        model = McpServer
        fields = ["owner", "name", "description", "transport", "url", "command", "args"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        transport = cleaned.get("transport")
        changing = not self.instance._state.adding
        if changing and transport and transport != self.instance.transport:
            self.add_error("transport", "cannot be changed: register a new server instead")
        if transport and not mcp_checks.may_manage(self.request_user, transport):
            raise forms.ValidationError(mcp_checks.STDIO_STAFF_ONLY)
        if transport == McpServer.Transport.HTTP:
            self._clean_http(cleaned)
        elif transport == McpServer.Transport.STDIO:
            self._clean_stdio(cleaned)
        return cleaned

    def _clean_http(self, cleaned: dict[str, Any]) -> None:
        for field in ("command", "args", "new_env"):
            if cleaned.get(field):
                self.add_error(field, f"an http server takes no {field}")
        self._check("url", mcp_checks.check_url, cleaned.get("url") or "")
        if cleaned.get("new_headers"):
            self._check(
                "new_headers", mcp_checks.check_headers, _string_map(cleaned["new_headers"])
            )

    def _clean_stdio(self, cleaned: dict[str, Any]) -> None:
        for field in ("url", "new_headers"):
            if cleaned.get(field):
                self.add_error(field, f"a stdio server takes no {field}")
        self._check("command", mcp_checks.check_command, cleaned.get("command") or "")
        args = cleaned.get("args") or []
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            self.add_error("args", "a JSON list of strings")
        else:
            self._check("args", mcp_checks.check_args, args)
        if cleaned.get("new_env"):
            self._check("new_env", mcp_checks.check_env, _string_map(cleaned["new_env"]))

    def _check(self, field: str, check: Any, value: Any) -> None:
        if field in self.errors:
            return
        try:
            check(value)
        except mcp_checks.InvalidValue as exc:
            self.add_error(field, exc.message)

    def save(self, commit: bool = True) -> McpServer:
        server = super().save(commit=False)
        server.args = server.args or []
        if server.created_by_id is None and self.request_user is not None:
            server.created_by_id = self.request_user.pk
        for field, setter in (("headers", server.set_headers), ("env", server.set_env)):
            if self.cleaned_data.get(f"new_{field}"):
                setter(_string_map(self.cleaned_data[f"new_{field}"]))
            elif self.cleaned_data.get(f"remove_{field}"):
                setter({})
        if commit:
            server.save()
        return server


def _string_map(value: Any) -> dict[str, str]:
    """A JSON object of strings; anything else is a form error."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise forms.ValidationError("a JSON object whose values are strings")
    return value


@admin.register(McpServer)
class McpServerAdmin(McpServerAdminBase):
    form = McpServerForm
    list_display = ["name", "owner", "transport", "target", "created_by", "updated_at"]
    list_filter = ["transport"]
    list_select_related = ["owner", "created_by"]
    search_fields = ["name", "url", "command", "owner__username"]
    readonly_fields = ["command_line", "header_names", "env_names", "created_by"]
    fields = [
        "owner",
        "name",
        "description",
        "transport",
        "url",
        "header_names",
        "new_headers",
        "remove_headers",
        "command",
        "args",
        "command_line",
        "env_names",
        "new_env",
        "remove_env",
        "created_by",
    ]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"request_user": request.user})

    def has_change_permission(self, request: HttpRequest, obj: McpServer | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or mcp_checks.may_manage(request.user, obj.transport))

    @admin.display(description="target")
    def target(self, server: McpServer) -> str:
        """What Studio connects to or runs, as text."""
        return server.url or server.command_line
