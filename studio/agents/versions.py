"""What a stored version's tree reads of its owner's other things: the agents it
references (``StoredSpecs``) and the model configs its calls go to
(``VersionModels``), each read once for a run's start or end (``studio.agents.specs``
builds with them)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agents_core import builder as core_builder
from agents_core import exceptions as core_exceptions
from agents_core import specs as core_specs
from studio.costs import Price
from studio.models import Agent, AgentVersion, ModelConfig


def model_configs(owner_id: int) -> dict[str, ModelConfig]:
    """The model configs of the user ``owner_id``, by name."""
    return {config.name: config for config in ModelConfig.objects.filter(owner_id=owner_id)}


class StoredSpecs(Mapping[str, core_specs.AgentSpec]):
    """``owner_agent_specs`` (by the owner's id) for building and running one tree: each
    agent is read and validated only when the tree names it (``{"ref": name}``). A
    run's tree names few of its owner's agents, if any, and a run looks them up three
    times (built, priced, ended): reading every agent each time made a run's cost grow
    with its owner's agents, and one stored spec that no longer validates failed the
    runs of all the others. ``standing_in``: specs that stand in for stored ones (one
    being validated before it is saved)."""

    def __init__(
        self, owner_id: int, standing_in: Mapping[str, core_specs.AgentSpec] | None = None
    ) -> None:
        self._agents = Agent.objects.filter(owner_id=owner_id, current_version__isnull=False)
        self._standing_in = dict(standing_in or {})
        self._read: dict[str, core_specs.AgentSpec | None] = dict(self._standing_in)

    def __getitem__(self, name: str) -> core_specs.AgentSpec:
        if name not in self._read:
            current = self._agents.filter(name=name).values_list("current_version__spec")
            row = current.first()
            self._read[name] = None if row is None else _stored(name, row[0])
        if (spec := self._read[name]) is None:
            raise KeyError(name)
        return spec

    def __iter__(self) -> Iterator[str]:
        stored = self._agents.exclude(name__in=self._standing_in).values_list("name", flat=True)
        return iter([*stored, *self._standing_in])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _stored(name: str, spec: Any) -> core_specs.AgentSpec:
    try:
        return core_specs.AgentSpec.model_validate(spec)
    except ValidationError as exc:
        raise core_exceptions.SpecError(
            f"agent {name!r}'s current version no longer validates "
            f"({exc.error_count()} problem(s)): save it again to fix it"
        ) from None


@dataclass(frozen=True, slots=True)
class VersionModels:
    """The models a stored version's calls go to, as its owner's model configs say now,
    read once: a run reads them as it starts (to build it and price its calls) and as it
    ends (which model each agent called), each time once rather than per question."""

    spec: core_specs.AgentSpec
    """The version's spec, validated."""
    agents: StoredSpecs
    """The owner's agents, those the tree references read while walking it."""
    configs: dict[str, ModelConfig]
    """The owner's model configs by name."""
    by_agent: dict[str, ModelConfig]
    """The config each agent of the tree calls, by agent name (names are unique in a
    tree, references included). An agent whose model config is gone is left out."""
    summary: ModelConfig | None
    """The compaction summariser's config, if compaction is on and it still exists."""

    @property
    def agent_models(self) -> dict[str, str]:
        """By agent name, the config's ``model``, what the provider is asked for, or the
        config's name when it names none (a scripted model)."""
        return {agent: _model_of(config) for agent, config in self.by_agent.items()}

    @property
    def agent_prices(self) -> dict[str, Price]:
        """By agent name; an agent whose model has no price is left out (its calls cost
        unknown)."""
        return {a: price for a, config in self.by_agent.items() if (price := config.price())}

    @property
    def config_models(self) -> dict[str, str]:
        """By config name, what ``agent_models`` names for each of the owner's configs."""
        return {name: _model_of(config) for name, config in self.configs.items()}

    @property
    def config_prices(self) -> dict[str, Price]:
        """By config name, the price of each of the owner's configs that has one."""
        return {n: price for n, config in self.configs.items() if (price := config.price())}

    @property
    def summary_price(self) -> Price | None:
        return self.summary.price() if self.summary else None

    @property
    def summary_model(self) -> str:
        """Named as ``agent_models`` names them; empty when compaction is off."""
        return _model_of(self.summary) if self.summary else ""


def version_models(version: AgentVersion) -> VersionModels:
    owner_id = version.agent.owner_id  # the id alone: reading the user is a query
    configs = model_configs(owner_id)
    root = core_specs.AgentSpec.model_validate(version.spec)
    stored = StoredSpecs(owner_id)
    found: dict[str, ModelConfig] = {}
    pending = [root]
    seen: set[str] = set()
    while pending:
        spec = pending.pop()
        if spec.model in configs:
            found[spec.name] = configs[spec.model]
        for child in [*spec.agent_tools, *spec.sub_agents]:
            if isinstance(child, core_specs.AgentSpec):
                pending.append(child)
            elif child.ref not in seen:
                seen.add(child.ref)
                pending.extend([stored[child.ref]] if child.ref in stored else [])
    summariser = core_builder.compaction_model(root, stored)
    summary = configs.get(summariser) if summariser else None
    return VersionModels(root, stored, configs, found, summary)


def _model_of(config: ModelConfig) -> str:
    return config.model or config.name
