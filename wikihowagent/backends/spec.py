"""Model spec types and the alias file (no provider logic here: see registry.py and the provider modules).

A spec names a backend and a model:

    local                 the embedded llama.cpp model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M), in-process
    local:<name>          a named GGUF from `local_models:` in the alias file, or a path to a .gguf file
    ollama:<tag>          an Ollama model, e.g. ollama:openchat:7b (OLLAMA_HOST, default 127.0.0.1:11434)
    openai:<model>        OpenAI (OPENAI_API_KEY) or any OpenAI-compatible server (OPENAI_BASE_URL / base_url)
    <alias>               a name from wikihowagent/configs/models.yaml, e.g. openchat -> ollama:openchat:7b

Importing this module has no side effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from .errors import BackendError

# The key of a chat model's `metadata` naming the `--judge-scoring` mode its provider measured best for its
# judge, the default where none is asked for (judge/scoring.default_mode); a provider without one
# leaves the choice to the backend's abilities (weighted with log-probabilities, else json).
JUDGE_SCORING_METADATA = "wikihowagent_judge_scoring"

Provider = str  # a name in registry.PROVIDERS (an extension point: a new provider is a module and its entry there)

REPLY_CAP_FIELDS = ("max_tokens", "num_predict")  # LangChain's reply caps: the OpenAI family (and the pool), Ollama


@dataclass(frozen=True)
class Capabilities:
    """What a provider's chat models can do, declared once in its registry entry (registry.PROVIDERS; a chat
    model of another class declares its own as a `capabilities` attribute) and read through
    `registry.capabilities(provider_or_chat_model)` only."""

    logprobs: bool = False  # replies carry token log-probabilities (--judge-scoring weighted, checklist's P(yes))
    reply_cap: str | None = None  # the field holding the reply cap (one of REPLY_CAP_FIELDS); None: no cap
    reply_cap_inherited: bool = False  # an unset cap means "its parts' caps" (the replica pool), not "no cap"
    likelihood: str | None = None  # how the likelihood post-test reads its server: "echo" or "grammar"; None: not
    slots: int | None = None  # the slots of the embedded server the model talks to (known once it serves)


# Used when the alias file is missing (the shipped wikihowagent/configs/models.yaml says the same).
BUILTIN_ALIASES: dict[str, str] = {
    "local": "local",
    "openchat": "ollama:openchat:7b",
    "qwen2": "ollama:qwen2:7b",
    "deepseek": "ollama:deepseek-llm:7b",
    "gemma": "ollama:gemma:7b",
    "olmo2": "ollama:olmo2:7b",
    "llama3": "ollama:llama3:8b",
    "phi4": "ollama:phi4:14b",
    "gpt-4": "openai:gpt-4",
}

FORMS = "local, local:<name>, ollama:<tag>, openai:<model>"


class ResolvedSpec(BaseModel):
    """What a spec means. Holds no secret: safe to print, log and store in run records."""

    model_config = ConfigDict(frozen=True)

    spec: str  # as the user gave it
    provider: Provider
    model: str  # local: the model name; ollama: the tag; openai: the model id
    display: str  # e.g. "openchat = ollama:openchat:7b" (just the canonical form when no alias)
    base_url: str | None = None  # ollama host / OpenAI-compatible base; None = default (openai) or embedded (local)
    path: str | None = None  # local: a GGUF file other than the built-in model

    @property
    def canonical(self) -> str:
        return f"{self.provider}:{self.model}"


class Target(NamedTuple):
    """What a provider makes of the part after `provider:` (see each provider's `resolve`)."""

    model: str
    base_url: str | None = None
    path: str | None = None


# --------------------------------------------------------------------------- alias file


class AliasFile(BaseModel):
    aliases: dict[str, str | dict[str, Any]] = {}
    local_models: dict[str, str] = {}
    source: str = "built-in aliases"


def default_aliases_path() -> Path:
    from wikihowagent.config import resource_path

    return resource_path("configs", "models.yaml")


def load_aliases(aliases_path: Path | str | None = None) -> AliasFile:
    """The alias file; a missing default file falls back to BUILTIN_ALIASES."""
    import yaml

    explicit = aliases_path is not None and str(aliases_path) != ""
    path = Path(aliases_path).expanduser() if explicit and aliases_path is not None else default_aliases_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if explicit:
            raise BackendError(f"{path}: model alias file not found") from None
        return AliasFile(aliases=dict(BUILTIN_ALIASES))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        raise BackendError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None
    data = data or {}
    if not isinstance(data, dict):
        raise BackendError(f"{path}: expected a mapping with 'aliases:' (and optionally 'local_models:')")
    aliases = data.get("aliases") or {}
    local_models = data.get("local_models") or {}
    if not isinstance(aliases, dict) or not isinstance(local_models, dict):
        raise BackendError(f"{path}: 'aliases' and 'local_models' must be mappings")
    clean: dict[str, str | dict[str, Any]] = {}
    for name, target in aliases.items():
        if isinstance(target, dict):
            if not isinstance(target.get("spec"), str):
                raise BackendError(f"{path}: alias '{name}' needs a 'spec:' string")
            entry: dict[str, Any] = {
                k: ([str(x) for x in v] if isinstance(v, list) else str(v)) for k, v in target.items() if v is not None
            }
            if isinstance(entry.get("base_urls"), list) and "base_url" not in entry:
                entry["base_url"] = entry["base_urls"][0]  # replicas: the first one
            clean[str(name)] = entry
        elif isinstance(target, str):
            clean[str(name)] = target.strip()
        else:
            raise BackendError(f"{path}: alias '{name}' must be a spec string or a mapping with 'spec:'")
    locals_: dict[str, str] = {}
    for name, target in local_models.items():
        p = Path(str(target)).expanduser()
        if not p.is_absolute():
            p = path.parent / p
        locals_[str(name)] = str(p)
    return AliasFile(aliases=clean, local_models=locals_, source=str(path))


def unknown_spec(spec: str, af: AliasFile, why: str = "") -> BackendError:
    names = ", ".join(af.aliases) or "none"
    lead = f"Unknown model '{spec}'" + (f" ({why})" if why else "")
    return BackendError(f"{lead}. Valid forms: {FORMS}, or an alias ({names}) from {af.source}.")
