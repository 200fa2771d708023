"""An MCP server's resources and prompts, offered to an agent as tools.

Beside its tools, a server may offer resources (documents the client reads by URI) and
prompts (message templates filled in with arguments). ``context_tools`` turns what an
open ``McpToolset``'s server advertises into tools the model calls like any other, so
each read is a tool call in the run's events::

    async with McpToolset(server) as toolset:
        tools = [*toolset.tools, *context_tools(toolset, prefix="docs__")]

- ``list_resources``: each resource (and resource template) as ``uri``, name, MIME
  type and description, one per line.
- ``read_resource(uri)``: the text of the resource. Binary contents are never passed
  on: the model reads a one-line summary (URI, MIME type, size).
- ``list_prompts``: each prompt with its arguments.
- ``get_prompt(name, arguments)``: the prompt's messages as ``role: text`` lines.

A server that does not advertise resources (or prompts) gets none of their tools.
Every answer is capped at ``max_chars`` characters.
"""

from __future__ import annotations

import base64
import binascii
from functools import partial
from typing import Any

from mcp import Client
from mcp.types import (
    BlobResourceContents,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ReadResourceResult,
    TextResourceContents,
)
from pydantic import BaseModel, ConfigDict, Field

from agents_core.tools.base import BaseTool, ToolContext
from agents_core.tools.mcp import McpToolset, render_block

MAX_CHARS = 100_000
_MAX_PAGES = 20


def context_tools(
    toolset: McpToolset, *, prefix: str = "", max_chars: int = MAX_CHARS
) -> list[BaseTool]:
    """The resource and prompt tools the open ``toolset``'s server supports, each named
    ``prefix`` + its own name."""
    capabilities = toolset.capabilities
    tools: list[BaseTool] = []
    if capabilities.resources is not None:
        tools += [
            ListResources(toolset, prefix, max_chars),
            ReadResource(toolset, prefix, max_chars),
        ]
    if capabilities.prompts is not None:
        tools += [ListPrompts(toolset, prefix, max_chars), GetPrompt(toolset, prefix, max_chars)]
    return tools


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _ReadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uri: str = Field(min_length=1, max_length=4_000, description="The resource's URI.")


class _PromptArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=256, description="The prompt's name.")
    arguments: dict[str, str] = Field(
        default_factory=dict, description="The prompt's arguments, by name."
    )


class _ContextTool(BaseTool):
    args_model: type[BaseModel] = _NoArgs
    own_name = ""

    def __init__(self, toolset: McpToolset, prefix: str, max_chars: int) -> None:
        self.toolset = toolset
        self.name = prefix + self.own_name
        self.max_chars = max_chars
        self.timeout_s = toolset.call_timeout_s

    def parameters_schema(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        text = await self.answer(self.args_model.model_validate(args))
        if len(text) > self.max_chars:
            return text[: self.max_chars] + f"\n[cut at {self.max_chars} characters]"
        return text

    async def answer(self, args: Any) -> str:
        raise NotImplementedError


class ListResources(_ContextTool):
    own_name = "list_resources"
    description = "List the resources (documents) this MCP server offers, with their URIs."

    async def answer(self, args: _NoArgs) -> str:
        lines: list[str] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await self.toolset.request(
                "resources/list", partial(_list_resources, cursor=cursor), timeout_s=self.timeout_s
            )
            for res in page.resources:
                lines.append(_line(res.uri, res.name, res.mime_type, res.description))
            if (cursor := page.next_cursor) is None:
                break
        templates = await self.toolset.request(
            "resources/templates/list",
            lambda client: client.list_resource_templates(),
            timeout_s=self.timeout_s,
        )
        for tpl in templates.resource_templates:
            lines.append(_line(tpl.uri_template, tpl.name, tpl.mime_type, tpl.description))
        return "\n".join(lines) or "no resources"


class ReadResource(_ContextTool):
    own_name = "read_resource"
    description = "Read one resource of this MCP server by its URI; answers its text."
    args_model = _ReadArgs

    async def answer(self, args: _ReadArgs) -> str:
        result: ReadResourceResult = await self.toolset.request(
            f"resource {args.uri!r}",
            lambda client: client.read_resource(args.uri),
            timeout_s=self.timeout_s,
        )
        return "\n".join(render_contents(item) for item in result.contents)


class ListPrompts(_ContextTool):
    own_name = "list_prompts"
    description = "List the prompts (message templates) this MCP server offers."

    async def answer(self, args: _NoArgs) -> str:
        lines: list[str] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await self.toolset.request(
                "prompts/list", partial(_list_prompts, cursor=cursor), timeout_s=self.timeout_s
            )
            for prompt in page.prompts:
                params = ", ".join(
                    arg.name + ("" if arg.required else "?") for arg in prompt.arguments or []
                )
                lines.append(f"{prompt.name}({params})" + _about(prompt.description))
            if (cursor := page.next_cursor) is None:
                break
        return "\n".join(lines) or "no prompts"


class GetPrompt(_ContextTool):
    own_name = "get_prompt"
    description = "Get one prompt of this MCP server, filled in with its arguments."
    args_model = _PromptArgs

    async def answer(self, args: _PromptArgs) -> str:
        result: GetPromptResult = await self.toolset.request(
            f"prompt {args.name!r}",
            lambda client: client.get_prompt(args.name, args.arguments),
            timeout_s=self.timeout_s,
        )
        return render_prompt(result)


async def _list_resources(client: Client, *, cursor: str | None) -> ListResourcesResult:
    return await client.list_resources(cursor=cursor)


async def _list_prompts(client: Client, *, cursor: str | None) -> ListPromptsResult:
    return await client.list_prompts(cursor=cursor)


def render_contents(item: TextResourceContents | BlobResourceContents) -> str:
    """A resource's text as is; binary contents as a summary, never their bytes."""
    if isinstance(item, TextResourceContents):
        return item.text
    try:
        size = len(base64.b64decode(item.blob, validate=True))
    except (binascii.Error, ValueError):
        size = None
    bytes_ = "unreadable base64" if size is None else f"{size} bytes"
    return f"[binary resource {item.uri}: {item.mime_type or 'unknown type'}, {bytes_}]"


def render_prompt(result: GetPromptResult) -> str:
    lines = [f"({result.description})"] if result.description else []
    lines += [f"{message.role}: {render_block(message.content)}" for message in result.messages]
    return "\n".join(lines)


def _line(uri: str, name: str, mime_type: str | None, description: str | None) -> str:
    return f"{uri} | {name}" + (f" ({mime_type})" if mime_type else "") + _about(description)


def _about(description: str | None) -> str:
    return f": {description}" if description else ""
