"""A published agent's A2A card: who it is, where to call it, what it can do (a skill
for the agent itself and one for each tool its spec gives it) and how to sign in (an
HTTP bearer token: one of the owner's MCP tokens)."""

from __future__ import annotations

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from agents_core import specs as core_specs
from studio.agents.tools import tool_registry
from studio.models import Agent

SCHEME = "studio_token"
TEXT = ["text/plain"]
MAX_TOOL_SKILLS = 32


def rpc_path(agent: Agent) -> str:
    return f"/a2a/{agent.pk}/"


def card_for(agent: Agent, base_url: str) -> AgentCard:
    """``agent``'s card as served from ``base_url`` (scheme and host, no slash)."""
    version = agent.current_version
    if version is None:  # a published agent has one (services.a2a_serving): a wiring bug
        raise ValueError(f"agent {agent.name!r} has no version to serve")
    spec = core_specs.AgentSpec.model_validate(version.spec)
    about = agent.description or spec.description or f"The Studio agent {agent.name}."
    return AgentCard(
        name=agent.name,
        description=about,
        version=str(version.number),
        provider=AgentProvider(organization="Studio", url=base_url),
        supported_interfaces=[
            AgentInterface(
                url=base_url + rpc_path(agent),
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="smcp_ token",
                    description="A Studio MCP token of the agent's owner (MCP tokens page).",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList()})],
        default_input_modes=TEXT,
        default_output_modes=TEXT,
        skills=[_agent_skill(agent, about), *_tool_skills(agent, spec)],
    )


def _agent_skill(agent: Agent, about: str) -> AgentSkill:
    return AgentSkill(
        id=agent.name,
        name=agent.name,
        description=f"{about} Each task runs as a session of the agent in Studio.",
        tags=["studio", "agent"],
    )


def _tool_skills(agent: Agent, spec: core_specs.AgentSpec) -> list[AgentSkill]:
    registry = tool_registry(agent.owner_id)
    skills: dict[str, AgentSkill] = {}
    for ref in spec.tools:
        entry = registry.get(ref.name)
        about = entry.description if entry is not None else ""
        skills.setdefault(ref.name, _tool_skill(ref.name, about or f"The {ref.name} tool."))
    for mcp in spec.mcp:
        about = f"The tools of the MCP server {mcp.server}."
        skills.setdefault(f"mcp-{mcp.server}", _tool_skill(f"mcp-{mcp.server}", about))
    for child in spec.agent_tools:
        about = child.description or f"Asks the {child.name} agent."
        skills.setdefault(f"agent-{child.name}", _tool_skill(f"agent-{child.name}", about))
    return list(skills.values())[:MAX_TOOL_SKILLS]


def _tool_skill(name: str, description: str) -> AgentSkill:
    return AgentSkill(id=f"tool-{name}", name=name, description=description, tags=["tool"])
