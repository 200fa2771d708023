"""Building a stored version reads its owner's other agents only where its tree names
them (``versions.StoredSpecs``): an agent whose stored spec no longer validates (an older
Studio stored it) fails its own runs and the trees that reference it, with a clear
error, and no other agent's. What a version's model calls cost and go to is read once
(``versions.VersionModels``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from agents_core import exceptions as core_exceptions
from agents_core.agents import SequentialAgent
from studio import services
from studio.agents import specs, versions
from studio.mcp.client import servers_for_run
from studio.models import Agent, AgentVersion, ModelConfig, Run
from tests.studio.conftest import make_agent, make_session

pytestmark = pytest.mark.django_db


def _no_longer_valid(owner: User, name: str) -> None:
    """Give ``name`` (made if it is not yet) a current spec today's contract refuses,
    written past the model, as an older release's rows would be."""
    agent = Agent.objects.filter(owner=owner, name=name).first() or make_agent(owner, name)
    version = agent.current_version
    assert version is not None
    AgentVersion.objects.filter(pk=version.pk).update(spec={"name": name, "flavour": "old"})


def test_an_agent_builds_prices_and_ends_beside_one_whose_stored_spec_no_longer_validates(
    ada: User,
) -> None:
    helper = make_agent(ada, "helper")
    version = helper.current_version
    _no_longer_valid(ada, "legacy")
    assert version is not None

    built = specs.build(version)

    assert built.agent.name == "helper"
    assert specs.agent_models(version) == {"helper": "scripted"}
    assert versions.version_models(version).summary_model == "scripted"
    run = Run.objects.create(session=make_session(ada, helper), message="hi")
    assert servers_for_run(run) == []


def _boss_of_helper(owner: User) -> AgentVersion:
    """A workflow agent whose one step is ``{"ref": "helper"}``."""
    spec = {"type": "sequential", "name": "boss", "sub_agents": [{"ref": "helper"}]}
    version = services.create_agent(owner, name="boss", spec=spec).current_version
    assert version is not None
    return version


def test_a_reference_is_built_from_the_named_agent_s_current_spec(ada: User) -> None:
    make_agent(ada, "helper")
    _no_longer_valid(ada, "legacy")
    boss = _boss_of_helper(ada)

    built = specs.build(boss)

    assert isinstance(built.agent, SequentialAgent)
    assert [agent.name for agent in built.agent.sub_agents] == ["helper"]
    assert specs.agent_models(boss) == {"helper": "scripted"}


def test_a_tree_naming_the_agent_that_no_longer_validates_fails_saying_which(ada: User) -> None:
    make_agent(ada, "helper")
    boss = _boss_of_helper(ada)
    _no_longer_valid(ada, "helper")

    with pytest.raises(core_exceptions.SpecError, match=r"agent 'helper'.*no longer validates"):
        specs.build(boss)


def test_a_model_whose_stored_options_no_longer_validate_fails_the_run_saying_which(
    ada: User,
) -> None:
    """Options saved past the API (an older release, a row written by hand) fail the
    run that builds the model, naming each option and what is wrong with it."""
    agent = make_agent(ada, "helper")
    ModelConfig.objects.filter(owner=ada, name="scripted").update(
        options={"base_url": "http://localhost:9/v1", "token_delay_s": "soon"}
    )
    version = agent.current_version
    assert version is not None
    with pytest.raises(core_exceptions.ConfigurationError) as failed:
        specs.build(version)
    said = failed.value.message
    assert said.startswith("model 'scripted' has invalid options: "), said
    assert "base_url: not an option of Scripted (offline) models (" in said
    assert "token_delay_s: " in said and "soon" not in said  # the values are not repeated


def test_the_stored_specs_list_the_owner_s_agents_only(ada: User, bob: User) -> None:
    make_agent(ada, "helper")
    make_agent(bob, "theirs")

    stored = versions.StoredSpecs(ada.pk)

    assert list(stored) == ["helper"] and len(stored) == 1
    assert "theirs" not in stored and stored.get("theirs") is None
    assert stored["helper"].name == "helper"


def test_a_version_s_models_prices_and_summariser_are_read_in_one_query(
    ada: User, django_assert_num_queries: Any
) -> None:
    version = make_agent(ada, "helper").current_version
    assert version is not None
    version = AgentVersion.objects.select_related("agent__owner").get(pk=version.pk)

    with django_assert_num_queries(1):  # the owner's model configs; no reference to read
        models = versions.version_models(version)

    assert models.agent_models == {"helper": "scripted"}
    assert models.summary_model == "scripted"  # compaction summarises with the agent's model
    assert models.agent_prices == {} and models.summary_price is None  # scripted: no price
    assert set(models.configs) == {"scripted"}
