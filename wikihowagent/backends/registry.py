"""The provider registry: model specs -> LangChain chat models.

A spec names a provider and a model (`local`, `local:<name>`, `ollama:<tag>`, `openai:<model>`) or is an
alias from wikihowagent/configs/models.yaml (e.g. openchat -> ollama:openchat:7b). Each provider is one module exposing

    resolve(given, rest, base_url, aliases) -> Target     what `provider:<rest>` means (no I/O)
    check(resolved, base_url, need) -> None                fail fast with one line (never starts a server)
    make(resolved, settings, local, base_url) -> BaseChatModel
    judge_scoring(resolved) -> str | None                  optional: the judge's measured default --judge-scoring

Adding a provider = one module + one entry in PROVIDERS (imported lazily: importing this module loads no
provider and no heavy library). Resolve a spec once and pass the ResolvedSpec on.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from .errors import BackendError
from .spec import ResolvedSpec, load_aliases, unknown_spec

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.language_models import BaseChatModel

    from wikihowagent.config import LocalModelSettings, ModelSettings

# provider name -> module (relative to this package)
PROVIDERS: dict[str, str] = {
    "local": ".local",
    "ollama": ".ollama",
    "openai": ".openai_compat",
}


def provider(name: str) -> ModuleType:
    """The provider module for `name` (imported on first use)."""
    return importlib.import_module(PROVIDERS[name], __package__)


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
    target = provider(name).resolve(given, rest.strip(), base_url, af)
    canonical = f"{name}:{target.model}"
    display = canonical if given == canonical else f"{given} = {canonical}"
    return ResolvedSpec(
        spec=given, provider=name, model=target.model, display=display, base_url=target.base_url, path=target.path
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
    return resolved.provider == "local" and bool(provider("local").embedded(resolved))


def preferred_judge_scoring(spec: str | ResolvedSpec, aliases_path: Path | None = None) -> str | None:
    """The `--judge-scoring` mode `spec`'s provider measured best for this model as a judge (the embedded model:
    checklist; the provider module's optional `judge_scoring`), None where it names none. No I/O: known before
    any model is made (its chat model carries the same in its metadata, spec.JUDGE_SCORING_METADATA)."""
    resolved = _resolved(spec, aliases_path)
    declared = getattr(provider(resolved.provider), "judge_scoring", None)
    mode = declared(resolved) if callable(declared) else None
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
    model: BaseChatModel = provider(resolved.provider).make(resolved, settings, local, base_url)
    return model
