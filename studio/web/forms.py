"""Forms of the server-rendered pages. Most writes that the REST API already validates
go through the API from the pages' scripts; these forms read filters, and the MCP servers
page posts its own form, which applies ``studio.mcp``'s checks like the API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from agents_core.specs import NAME_PATTERN, NAME_RULE
from studio.agents import specs as agent_specs
from studio.mcp import checks as mcp_checks
from studio.models import (
    Agent,
    Event,
    McpServer,
    RemoteAgent,
    Run,
    RunStatus,
    Session,
    SessionStatus,
)


class _SecretTextarea(forms.Textarea):
    """A write-only textarea: like ``PasswordInput``, it never renders a value back."""

    def format_value(self, value: Any) -> str | None:
        return None


class AgentSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search agents")

    def filter(self, agents: QuerySet[Agent]) -> QuerySet[Agent]:
        if not self.is_valid() or not self.cleaned_data["q"]:
            return agents
        q = self.cleaned_data["q"]
        return agents.filter(Q(name__icontains=q) | Q(description__icontains=q))


class SessionFilterForm(forms.Form):
    """The sessions list's filters; every field is optional."""

    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(), required=False, empty_label="Any agent"
    )
    status = forms.ChoiceField(choices=[("", "Any status"), *SessionStatus.choices], required=False)
    created_from = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    created_to = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    q = forms.CharField(required=False, max_length=200, label="Text")
    sort = forms.ChoiceField(
        choices=[("", "Newest first"), ("-cost", "Costliest first"), ("cost", "Cheapest first")],
        required=False,
    )
    # The overview's links down: sessions with a run on these days (UTC), or a failed one.
    ran_from = forms.DateField(required=False, widget=forms.HiddenInput)
    ran_to = forms.DateField(required=False, widget=forms.HiddenInput)
    ran_errors = forms.BooleanField(required=False, widget=forms.HiddenInput)
    ran_model = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)
    external_agent = forms.UUIDField(required=False, widget=forms.HiddenInput)
    """An agent built elsewhere (the overview's row of one): its ingested sessions."""

    def __init__(self, *args: Any, owner: AbstractBaseUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agents = Agent.objects.filter(owner_id=owner.pk).order_by("name")
        self.fields["agent"].queryset = agents  # type: ignore[attr-defined]

    def carried(self) -> list[tuple[str, str]]:
        """The overview's filters the list was opened with (name, value), kept as hidden
        inputs when the visible ones change. Written as plain inputs by the page, only
        those set: four hidden widgets' templates were a tenth of the list's CPU."""
        hidden = self.hidden_fields()
        return [(field.name, str(value)) for field in hidden if (value := field.value())]

    def filter(self, sessions: QuerySet[Session]) -> QuerySet[Session]:
        if not self.is_valid():
            return sessions
        data = self.cleaned_data
        if data["agent"] is not None:
            sessions = sessions.filter(agent_version__agent=data["agent"])
        if data["external_agent"] is not None:
            sessions = sessions.filter(ingested__agent_id=data["external_agent"])
        if data["status"]:
            sessions = sessions.filter(status=data["status"])
        if data["created_from"] is not None:
            sessions = sessions.filter(created_at__date__gte=data["created_from"])
        if data["created_to"] is not None:
            sessions = sessions.filter(created_at__date__lte=data["created_to"])
        if data["q"]:
            # Exists, not a join: one row per session however many events match.
            matching = Event.objects.filter(session=OuterRef("pk"), text__icontains=data["q"])
            sessions = sessions.filter(Q(title__icontains=data["q"]) | Exists(matching))
        sessions = _ran(sessions, data)
        if data["sort"]:  # sessions with no known cost last, either way
            by_cost = (
                F("cost").desc(nulls_last=True)
                if data["sort"] == "-cost"
                else F("cost").asc(nulls_last=True)
            )
            sessions = sessions.order_by(by_cost, "-created_at")
        return sessions

    @property
    def active(self) -> bool:
        chosen = (
            {k: v for k, v in self.cleaned_data.items() if k != "sort"} if self.is_valid() else {}
        )
        return any(v not in (None, "", False) for v in chosen.values())


def _ran(sessions: QuerySet[Session], data: dict[str, Any]) -> QuerySet[Session]:
    """Sessions with a run created in ``ran_from``..``ran_to`` (failed or interrupted
    with ``ran_errors``): the runs an overview figure counts."""
    if data["ran_model"]:
        sessions = sessions.filter(Exists(_calls_to(data["ran_model"], data)))
    if data["ran_from"] is None and data["ran_to"] is None and not data["ran_errors"]:
        return sessions
    runs = Run.objects.filter(session=OuterRef("pk"))
    if data["ran_from"] is not None:
        runs = runs.filter(created_at__date__gte=data["ran_from"])
    if data["ran_to"] is not None:
        runs = runs.filter(created_at__date__lte=data["ran_to"])
    if data["ran_errors"]:
        runs = runs.filter(status__in=[RunStatus.FAILED, RunStatus.INTERRUPTED])
    return sessions.filter(Exists(runs))


def _calls_to(model: str, data: dict[str, Any]) -> QuerySet[Event]:
    """A session's calls to ``model`` on the days ``ran_from``..``ran_to`` (UTC)."""
    calls = Event.objects.filter(session=OuterRef("pk"), model=model, run__isnull=False)
    if data["ran_from"] is not None:
        calls = calls.filter(created_at__date__gte=data["ran_from"])
    if data["ran_to"] is not None:
        calls = calls.filter(created_at__date__lte=data["ran_to"])
    return calls


class EndpointForm(forms.Form):
    """A form that registers or changes one of the owner's remote endpoints (an MCP
    server, a remote A2A agent): its name, description and URL come from the instance."""

    def __init__(
        self,
        *args: Any,
        owner: AbstractBaseUser,
        instance: McpServer | RemoteAgent | None = None,
        **kwargs: Any,
    ) -> None:
        if instance is not None:
            kwargs.setdefault(
                "initial",
                {"name": instance.name, "description": instance.description, "url": instance.url},
            )
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.instance = instance


class HttpMcpServerForm(EndpointForm):
    """Registering or changing an ``http`` MCP server from its page, with the API's rules
    (``studio.mcp``'s checks, the spec name pattern, one name per owner, no rename while
    agents use the name). Header values are write-only: the field never renders a value,
    not even the one just posted, and an empty field keeps the stored headers."""

    name = forms.RegexField(
        regex=NAME_PATTERN,
        max_length=64,
        error_messages={"invalid": NAME_RULE},
        help_text='Agent specs name the server by it: {"mcp": [{"server": "<name>"}]}.',
    )
    description = forms.CharField(max_length=500, required=False)
    url = forms.CharField(
        label="URL",
        max_length=mcp_checks.MAX_URL_CHARS,
        help_text="The streamable HTTP endpoint. Loopback, private, link-local and "
        "metadata addresses are refused unless STUDIO_OUTBOUND_ALLOWLIST admits them.",
    )
    headers = forms.CharField(
        required=False,
        strip=False,
        # Secrets: no browser or password manager fills in or remembers what is typed.
        widget=_SecretTextarea(
            attrs={
                "rows": 3,
                "class": "code",
                "spellcheck": "false",
                "autocomplete": "off",
                "data-1p-ignore": "",
                "data-lpignore": "true",
                "data-bwignore": "",
                "data-form-type": "other",
            }
        ),
        help_text="Write-only, one 'Name: value' per line (e.g. Authorization: Bearer …). "
        "Stored encrypted and never shown again; leave empty to keep the stored headers.",
    )
    remove_headers = forms.BooleanField(required=False, label="Remove the stored headers")
    instance: McpServer | None

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        others = McpServer.objects.filter(owner_id=self.owner.pk, name=name)
        if self.instance is not None:
            others = others.exclude(pk=self.instance.pk)
        if others.exists():
            raise forms.ValidationError(f"you already have an MCP server named {name!r}")
        old = self.instance.name if self.instance is not None else name
        if old != name and (users := agent_specs.agents_using_mcp_server(self.owner, old)):
            raise forms.ValidationError(
                f"agents name this server by its current name: {', '.join(users)}"
            )
        return name

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        _check(mcp_checks.check_url, url)
        return url

    def clean_headers(self) -> dict[str, str] | None:
        """The posted headers, or ``None`` when the field was left empty."""
        text: str = self.cleaned_data["headers"]
        if not text.strip():
            return None
        headers: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            name, colon, value = line.partition(":")
            name = name.strip()
            if not colon or not name:
                raise forms.ValidationError(f"line {number}: write 'Name: value'")
            if name.lower() in {n.lower() for n in headers}:
                raise forms.ValidationError(f"line {number}: {name!r} is given twice")
            headers[name] = value.strip()
        _check(mcp_checks.check_headers, headers)
        return headers

    def save(self) -> McpServer | None:
        """The saved server, or ``None`` (with a form error) when the name was taken."""
        data = self.cleaned_data
        server = self.instance or McpServer(
            owner_id=self.owner.pk, created_by_id=self.owner.pk, transport=McpServer.Transport.HTTP
        )
        server.name = data["name"]
        server.description = data["description"]
        server.url = data["url"]
        if data["headers"] is not None:
            server.set_headers(data["headers"])
        elif data["remove_headers"] or self.instance is None:
            server.set_headers({})
        try:
            with transaction.atomic():
                server.save()
        except IntegrityError:
            # A concurrent request took the name: the same answer as one taken before.
            self.add_error("name", f"you already have an MCP server named {server.name!r}")
            return None
        return server


def _check(check: Callable[[Any], None], value: Any) -> None:
    try:
        check(value)
    except mcp_checks.InvalidValue as exc:
        raise forms.ValidationError(exc.message, code=exc.code) from None
