"""The form that registers or changes a remote A2A agent (``studio.web.remote_agents``),
with the API's rules (``studio.services.remote_agents``). The token is write-only: the
field never renders a value, not even the one just posted; empty keeps the stored one."""

from __future__ import annotations

from django import forms

from agents_core.specs import NAME_PATTERN, NAME_RULE
from studio.mcp import checks as mcp_checks
from studio.models import RemoteAgent
from studio.services import remote_agents as rules
from studio.web.forms import EndpointForm


class RemoteAgentForm(EndpointForm):
    name = forms.RegexField(
        regex=NAME_PATTERN,
        max_length=64,
        error_messages={"invalid": NAME_RULE},
        help_text='The agent\'s tool is a2a_<name>; specs list it: {"name": "a2a", '
        '"settings": {"servers": ["<name>"]}}.',
    )
    url = forms.CharField(
        label="A2A base URL",
        max_length=mcp_checks.MAX_URL_CHARS,
        help_text="Where its card is, under /.well-known/agent-card.json. Loopback, private, "
        "link-local and metadata addresses are refused unless STUDIO_OUTBOUND_ALLOWLIST "
        "admits them.",
    )
    description = forms.CharField(
        max_length=500,
        required=False,
        help_text="What the model reads about the agent; empty: its card's description.",
    )
    token = forms.CharField(
        required=False,
        strip=False,
        max_length=rules.MAX_TOKEN_CHARS,
        widget=forms.PasswordInput(
            attrs={"autocomplete": "off", "data-1p-ignore": "", "data-lpignore": "true"}
        ),
        help_text="Write-only: sent as Authorization: Bearer <token>, stored encrypted, never "
        "shown again. Leave empty to keep the stored token.",
    )
    remove_token = forms.BooleanField(required=False, label="Remove the stored token")

    instance: RemoteAgent | None

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if (why := rules.name_problem(self.owner, name, self.instance)) is not None:
            raise forms.ValidationError(why)
        return name

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        if (problem := rules.url_problem(url)) is not None:
            raise forms.ValidationError(problem.message, code=problem.code)
        return url

    def clean_token(self) -> str:
        token: str = self.cleaned_data["token"]
        if (why := rules.token_problem(token)) is not None:
            raise forms.ValidationError(why)
        return token

    def save(self) -> RemoteAgent:
        data = self.cleaned_data
        remote = self.instance or RemoteAgent(owner_id=self.owner.pk)
        remote.name, remote.url, remote.description = data["name"], data["url"], data["description"]
        if data["token"]:
            remote.set_token(data["token"])
        elif data["remove_token"]:
            remote.set_token("")
        remote.save()
        return remote
