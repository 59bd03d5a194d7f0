"""The provider registry: model specs -> LangChain chat models, and what each provider's models can do.

A spec names a provider and a model (`local`, `local:<name>`, `ollama:<tag>`, `openai:<model>`) or is an
alias from wikihowagent/configs/models.yaml (e.g. openchat -> ollama:openchat:7b). Each provider is one module
(`ProviderModule`) exposing

    resolve(given, rest, base_url, aliases) -> Target     what `provider:<rest>` means (no I/O)
    check(resolved, base_url, need) -> None                fail fast with one line (never starts a server)
    make(resolved, settings, local, base_url) -> BaseChatModel
    judge_scoring(resolved) -> str | None                  the judge's measured default --judge-scoring (or None)

and one entry in PROVIDERS: its module (imported lazily: importing this module loads no provider and no heavy
library) and its `Capabilities` (log-probabilities, reply cap, likelihood post-test), declared there once and
read through `capabilities(provider_or_chat_model)` only. Resolve a spec once and pass the ResolvedSpec on.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from wikihowagent.registry import Registry

from .errors import BackendError
from .spec import REPLY_CAP_FIELDS, AliasFile, Capabilities, ResolvedSpec, Target, load_aliases, unknown_spec

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.language_models import BaseChatModel

    from wikihowagent.config import LocalModelSettings, ModelSettings


class ProviderModule(Protocol):
    """What a provider module defines (see the module docstring)."""

    def resolve(self, given: str, rest: str, base_url: str | None, af: AliasFile) -> Target: ...

    def check(self, resolved: ResolvedSpec, base_url: str | None, need: str) -> None: ...

    def make(
        self, resolved: ResolvedSpec, settings: ModelSettings, local: LocalModelSettings, base_url: str | None
    ) -> BaseChatModel: ...

    def judge_scoring(self, resolved: ResolvedSpec) -> str | None: ...


@dataclass(frozen=True)
class ProviderEntry:
    module: str  # the provider module, relative to this package (imported on first use)
    capabilities: Capabilities  # what the chat models it makes can do


PROVIDERS: Registry[ProviderEntry] = Registry(
    "provider",
    {
        "local": ProviderEntry(".local", Capabilities(logprobs=True, reply_cap="max_tokens", likelihood="grammar")),
        "ollama": ProviderEntry(".ollama", Capabilities(logprobs=True, reply_cap="num_predict")),
        "openai": ProviderEntry(
            ".openai_compat", Capabilities(logprobs=True, reply_cap="max_tokens", likelihood="echo")
        ),
    },
)

_MADE_BY = "_wikihowagent_capabilities"  # the capabilities make_chat_model records on the chat model it makes


def provider(name: str) -> ProviderModule:
    """The provider module for `name` (imported on first use)."""
    return cast(ProviderModule, importlib.import_module(PROVIDERS.get(name).module, __package__))


def capabilities(of: str | Any) -> Capabilities:
    """What `of` can do, the one place that says it: a provider name -> its declared capabilities; a chat model ->
    those of the provider that made it (make_chat_model records them on it), else those its class declares as a
    `capabilities` attribute (the replica pool, a test model), else what LangChain's fields show (a model built
    outside the registry); with the slots of the embedded llama.cpp server it talks to, where it talks to one
    (then the likelihood post-test reads it by grammar)."""
    if isinstance(of, str):
        return PROVIDERS.get(of).capabilities
    declared = getattr(of, _MADE_BY, None) or getattr(of, "capabilities", None)
    caps = declared if isinstance(declared, Capabilities) else _shown_by_fields(of)
    local = sys.modules.get(f"{__package__}.local")  # never started a server if the module was never imported
    slots = local.serving_slots(of) if local is not None else None
    return caps if slots is None else replace(caps, slots=slots, likelihood="grammar")


def _shown_by_fields(model: Any) -> Capabilities:
    """The capabilities of a LangChain chat model no provider declared: the OpenAI family's and Ollama's clients
    have log-probability fields and a reply cap field; an OpenAI-compatible one has a base URL."""
    fields = getattr(type(model), "model_fields", {}) or {}
    return Capabilities(
        logprobs="logprobs" in fields and "top_logprobs" in fields,
        reply_cap=next((f for f in REPLY_CAP_FIELDS if f in fields), None),
        likelihood="echo" if getattr(model, "openai_api_base", None) else None,
    )


def resolve_spec(spec: str, aliases_path: Path | None = None) -> ResolvedSpec:
    """Alias lookup then `provider:model` parsing. Raises BackendError for unknown specs."""
    given = (spec or "").strip()
    af = load_aliases(aliases_path)
    if not given:
        raise unknown_spec(spec, af, "empty")
    current, base_url, seen = given, None, [given]
    while current in af.aliases:
        target = af.aliases[current]
        if isinstance(target, dict):
            base_url = base_url or target.get("base_url")  # the outermost alias's base_url wins
            target = target["spec"]
        target = target.strip()
        if target == current:  # e.g. `local: local`
            break
        if target in seen or len(seen) > 10:
            raise BackendError(f"{af.source}: alias loop: {' -> '.join([*seen, target])}")
        seen.append(target)
        current = target

    name, colon, rest = current.partition(":")
    name = name.strip().lower()
    if name not in PROVIDERS:
        why = f"unknown provider '{name}'; did you mean ollama:{current}?" if colon else ""
        raise unknown_spec(given, af, why)
    found = provider(name).resolve(given, rest.strip(), base_url, af)
    canonical = f"{name}:{found.model}"
    display = canonical if given == canonical else f"{given} = {canonical}"
    return ResolvedSpec(
        spec=given, provider=name, model=found.model, display=display, base_url=found.base_url, path=found.path
    )


def _resolved(spec: str | ResolvedSpec, aliases_path: Path | None = None) -> ResolvedSpec:
    return spec if isinstance(spec, ResolvedSpec) else resolve_spec(spec, aliases_path)


def check_backend(resolved: ResolvedSpec, base_url: str | None = None) -> None:
    """Fail fast with one clear line if `resolved` cannot be used. Never starts the local server.
    `base_url` overrides the Ollama host / OpenAI-compatible base URL of the spec."""
    need = f"needed for '{resolved.spec}'" + (f" = {resolved.canonical}" if resolved.spec != resolved.canonical else "")
    provider(resolved.provider).check(resolved, base_url, need)


def is_embedded(spec: str | ResolvedSpec, aliases_path: Path | None = None) -> bool:
    """`spec` names the embedded model (`local`: the bundled weights), not another GGUF; False for a spec that
    does not resolve. No I/O."""
    try:
        resolved = _resolved(spec, aliases_path)
    except BackendError:
        return False
    if resolved.provider != "local":
        return False
    return bool(importlib.import_module(PROVIDERS.get("local").module, __package__).embedded(resolved))


def preferred_judge_scoring(spec: str | ResolvedSpec, aliases_path: Path | None = None) -> str | None:
    """The `--judge-scoring` mode `spec`'s provider measured best for this model as a judge (the embedded model:
    checklist; the provider module's `judge_scoring`), None where it names none. No I/O: known before
    any model is made (its chat model carries the same in its metadata, spec.JUDGE_SCORING_METADATA)."""
    resolved = _resolved(spec, aliases_path)
    mode = provider(resolved.provider).judge_scoring(resolved)
    return mode if isinstance(mode, str) else None


def make_chat_model(
    spec: str | ResolvedSpec,
    settings: ModelSettings,
    local: LocalModelSettings,
    *,
    base_url: str | None = None,
    aliases_path: Path | None = None,
) -> BaseChatModel:
    """A LangChain chat model for `spec` with temperature, seed, max_tokens, timeout and retries set.

    `local` starts (or reuses) the embedded llama.cpp server in this process: ~3 s the first time,
    plus a one-off assembly of the weights (~5-20 s) if `ensure_local_model()` has not run yet.
    `base_url` overrides the Ollama host / OpenAI-compatible base URL of the spec.
    """
    resolved = _resolved(spec, aliases_path)
    model = provider(resolved.provider).make(resolved, settings, local, base_url)
    setattr(model, _MADE_BY, capabilities(resolved.provider))  # noqa: B010 - a pydantic model takes a private name
    return model
