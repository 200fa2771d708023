"""Forms of the server-rendered pages. Writes that the REST API already validates go
through the API from the pages' scripts; these forms only read filters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Exists, OuterRef, Q, QuerySet

from studio.models import Agent, Event, Session, SessionStatus


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

    def __init__(self, *args: Any, owner: AbstractBaseUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agents = Agent.objects.filter(owner_id=owner.pk).order_by("name")
        self.fields["agent"].queryset = agents  # type: ignore[attr-defined]

    def filter(self, sessions: QuerySet[Session]) -> QuerySet[Session]:
        if not self.is_valid():
            return sessions
        data = self.cleaned_data
        if data["agent"] is not None:
            sessions = sessions.filter(agent_version__agent=data["agent"])
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
        return sessions

    @property
    def active(self) -> bool:
        return self.is_valid() and any(v not in (None, "") for v in self.cleaned_data.values())
