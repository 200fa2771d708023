"""The forms of the datasets pages: a new dataset, an upload, a case, a session's turn."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django import forms

from agents_core.evals import formats
from agents_core.evals.contracts import CASE_NAME_MAX, TEXT_MAX
from agents_core.specs import NAME_PATTERN, NAME_RULE
from studio.models import Run

MAX_JSON_CHARS = 100_000


def _name_field(**kwargs: Any) -> forms.RegexField:
    return forms.RegexField(
        regex=NAME_PATTERN, max_length=64, error_messages={"invalid": NAME_RULE}, **kwargs
    )


class DatasetForm(forms.Form):
    name = _name_field(help_text="The name run_evals --dataset takes.")
    description = forms.CharField(max_length=2_000, required=False)


class UploadForm(forms.Form):
    file = forms.FileField(
        help_text='JSONL (a case a line: {"name": "sum", "input": "2 + 2?", '
        '"expect": {"final_output": "4"}}), CSV (name, input or turns, expected_output, '
        "expected_tool_calls, tags) or a Google ADK .evalset.json.",
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.ndjson,.csv,.json"}),
    )
    name = _name_field(
        required=False,
        label="Dataset",
        help_text="A new name, or one of yours to add a version to (the file's name if empty).",
    )
    format = forms.ChoiceField(
        choices=[("", "from the file"), *((f, f.upper()) for f in formats.FORMATS)],
        required=False,
    )

    def clean_file(self) -> Any:
        file = self.cleaned_data["file"]
        if file.size is not None and file.size > formats.MAX_FILE_BYTES:
            raise forms.ValidationError(f"at most {formats.MAX_FILE_BYTES:,} bytes")
        return file


class CaseForm(forms.Form):
    """One case of one turn; cases of several turns come by upload or the API."""

    name = forms.CharField(max_length=CASE_NAME_MAX)
    message = forms.CharField(
        label="User message",
        max_length=TEXT_MAX,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    expected_output = forms.CharField(
        label="Expected final answer",
        required=False,
        max_length=TEXT_MAX,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Empty: not checked.",
    )
    expected_tool_calls = forms.CharField(
        label="Expected tool calls (JSON)",
        required=False,
        max_length=MAX_JSON_CHARS,
        widget=forms.Textarea(attrs={"rows": 3, "class": "code", "spellcheck": "false"}),
        help_text='Like [{"name": "calculator", "args": {"expression": "2 + 2"}}]; '
        "[] expects none; empty: not checked.",
    )
    tags = forms.CharField(required=False, max_length=1_000, help_text="Comma-separated.")

    def clean_message(self) -> str:
        message: str = self.cleaned_data["message"]
        if not message.strip():
            raise forms.ValidationError("This field is required.")
        return message

    def clean_expected_tool_calls(self) -> Any:
        text = self.cleaned_data["expected_tool_calls"].strip()
        if not text:
            return None
        try:
            calls = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from None
        if not isinstance(calls, list):
            raise forms.ValidationError('a JSON list, like [{"name": "calculator"}]')
        return calls

    def case(self) -> dict[str, Any]:
        """The case as the contract's JSON (the service validates it)."""
        data = self.cleaned_data
        expect: dict[str, Any] = {}
        if data["expected_output"]:
            expect["final_output"] = data["expected_output"]
        if data["expected_tool_calls"] is not None:
            expect["tool_calls"] = data["expected_tool_calls"]
        tags = [tag.strip() for tag in data["tags"].split(",") if tag.strip()]
        return {
            "name": data["name"],
            "input": {"turns": [data["message"]]},
            "expect": expect,
            "tags": tags,
        }


class AddTurnForm(forms.Form):
    run = forms.ChoiceField(label="Turn")
    dataset = forms.CharField(
        max_length=64,
        help_text="One of your datasets, or a new name.",
        widget=forms.TextInput(attrs={"list": "dataset-names", "autocomplete": "off"}),
    )
    name = forms.CharField(
        label="Case name",
        max_length=CASE_NAME_MAX,
        required=False,
        help_text="From the message if empty.",
    )

    def __init__(self, *args: Any, runs: Sequence[Run], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.runs = {str(run.pk): run for run in runs}
        field = self.fields["run"]
        assert isinstance(field, forms.ChoiceField)  # noqa: S101 - declared above
        field.choices = [(key, _run_label(run)) for key, run in self.runs.items()]

    def clean_run(self) -> Run:
        return self.runs[self.cleaned_data["run"]]


def _run_label(run: Run) -> str:
    text = " ".join(run.message.split())
    short = text if len(text) <= 60 else text[:59] + "…"
    when = run.created_at.strftime("%H:%M:%S")
    return f"{when} · {short or '(resumed)'} · {run.status}"
