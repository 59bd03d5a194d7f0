"""The generic Registry[T], and the two extension points on it: a provider (with its capabilities) and a
`--judge-scoring` mode, each added by one registry entry and picked up everywhere without touching another file."""

from __future__ import annotations

import sys

import pytest

from wikihowagent.backends import Capabilities, capabilities, make_chat_model, preferred_judge_scoring, resolve_spec
from wikihowagent.backends.calls import with_reply_cap
from wikihowagent.backends.registry import PROVIDERS, ProviderEntry
from wikihowagent.backends.spec import JUDGE_SCORING_METADATA, Target
from wikihowagent.cli_options import judge_scoring_option
from wikihowagent.config import LocalModelSettings, ModelSettings
from wikihowagent.judge.modes import SCORING_MODES, ScoringMode, modes_metavar
from wikihowagent.judge.scoring import SampledScorer, ScoringError, make_scorer, resolve_mode
from wikihowagent.registry import Registry, RegistryError
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.likelihood import LikelihoodError, for_chat_model

TOY_CAPS = Capabilities(logprobs=False)


def test_a_registry_keeps_names_in_order_and_says_which_it_knows():
    reg: Registry[int] = Registry("colour", {"red": 1, "green": 2})
    reg.add("blue", 3)

    @reg.register("violet")
    def violet() -> int:
        return 4

    assert list(reg) == reg.names() == ["red", "green", "blue", "violet"] and len(reg) == 4
    assert reg.get("blue") == 3 and reg.get("violet") is violet and "red" in reg and "pink" not in reg
    with pytest.raises(RegistryError) as err:
        reg.get("pink")
    assert str(err.value) == "unknown colour 'pink'; known: red, green, blue, violet"
    with pytest.raises(RegistryError, match="colour 'red' is registered already"):
        reg.add("red", 9)
    assert reg.remove("violet") is violet and list(reg) == ["red", "green", "blue"]


# The toy provider: this module is its provider module (resolve / check / make / judge_scoring).
def resolve(given, rest, base_url, af):
    return Target(model=rest or "toy-model")


def check(resolved, base_url, need):
    return None


def make(resolved, settings, local, base_url):
    return ScriptedChatModel(script=lambda p: "4", metadata={JUDGE_SCORING_METADATA: "toy"})


def judge_scoring(resolved):
    return "toy"


class ToyScorer(SampledScorer):
    """A toy mode's scorer: the sampled scorer under another name."""


@pytest.fixture
def toy_provider_and_mode():
    PROVIDERS.add("toy", ProviderEntry(__name__, TOY_CAPS))
    SCORING_MODES.add("toy", ScoringMode(ToyScorer, prompt_variants=True))
    assert sys.modules[__name__].make is make
    yield
    PROVIDERS.remove("toy")
    SCORING_MODES.remove("toy")


def test_a_toy_provider_is_resolved_made_and_its_capabilities_read(toy_provider_and_mode):
    resolved = resolve_spec("toy:m1")
    assert (resolved.provider, resolved.model, resolved.display) == ("toy", "m1", "toy:m1")
    model = make_chat_model(resolved, ModelSettings(max_tokens=50), LocalModelSettings())
    assert capabilities("toy") == TOY_CAPS and capabilities(model) == TOY_CAPS
    assert preferred_judge_scoring("toy:m1") == "toy"
    assert with_reply_cap(model, 400) is model  # no reply cap declared: left as it is
    with pytest.raises(LikelihoodError, match="not an OpenAI-compatible model"):
        for_chat_model(model)


def test_a_toy_scoring_mode_is_a_choice_the_default_and_a_scorer(toy_provider_and_mode):
    assert judge_scoring_option("h", modes_metavar()).metavar == "weighted|json|sampled|checklist|toy"
    model = make_chat_model("toy:m1", ModelSettings(), LocalModelSettings())
    assert resolve_mode(None, model, "default") == "toy"  # the provider's measured default
    assert resolve_mode("toy", model, "default") == "toy"
    with pytest.raises(ScoringError, match="only --judge-scoring json applies"):
        resolve_mode("toy", model, "paper")
    with pytest.raises(ScoringError) as err:
        resolve_mode("weighted", model, "default")
    assert "use one of: json, sampled, checklist, toy" in str(err.value)  # the modes that need no log-probabilities
    assert isinstance(make_scorer("toy", model, {}, None), ToyScorer)


def test_an_unknown_provider_or_mode_keeps_its_message():
    from wikihowagent.backends import BackendError

    with pytest.raises(BackendError, match="unknown provider 'toy'"):
        resolve_spec("toy:m1")
    with pytest.raises(ScoringError, match=r"unknown mode 'toy'; valid: weighted, json, sampled, checklist$"):
        resolve_mode("toy", ScriptedChatModel(script=lambda p: "4"), "default")
