"""Run configuration: the bundled YAML files (`wikihowagent/configs/`), overridden by CLI flags. Nothing is read
at import."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from wikihowagent.errors import WikihowagentError, validation_line


class ModelSettings(BaseModel):
    """Decoding and transport settings shared by every backend."""

    temperature: float = Field(default=0.0, ge=0.0)  # a negative temperature means nothing to any backend
    seed: int = 42
    max_tokens: int = 512
    timeout_s: float = 600.0  # per request
    max_retries: int = 2  # retries with exponential backoff on transport/server errors
    num_ctx: int = 8192  # context window requested from Ollama (other backends size it server-side)


class LocalModelSettings(BaseModel):
    """The embedded llama.cpp server (`local` backend)."""

    n_ctx: int = 8192  # total context, split between the slots
    n_parallel: int = 1  # server slots (continuous batching); >1 makes outputs depend on what runs alongside
    n_threads: int = 0  # 0 = all cores
    max_tokens: int = 320  # a cap for the small local model: keeps a turn to ~20-30 s on 2 cores
    # Prompt tokens llama.cpp decodes in one step (n_batch = n_ubatch). The server sees a closed request (Ctrl-C)
    # or a stop only between steps, so this bounds the wait after Ctrl-C: one step of 64 tokens is ~0.3-3 s on 2
    # cores; llama.cpp's default, 2048, made a whole prompt one step (up to ~50 s on a busy machine).
    n_batch: int = Field(default=64, ge=8, le=2048)
    # llama.cpp's prompt cache: a request reuses the KV of the longest prefix it shares with its slot's last prompt
    # and reads only the rest. Off = every prompt read in full (reproducible). On = faster, but the reply then
    # depends on what the slot held before (docs/guides/backends.md); part of a run's fingerprint when on.
    cache_prompt: bool = False
    # Where the embedded model's GGUF is assembled (1.1 GB); "" = the user cache (platformdirs). The environment
    # variables WIKIHOWAGENT_MODELS and WIKIHOWAGENT_HOME win over it (backends/model_files.py models_dir).
    model_dir: str = ""


class WorkflowSettings(BaseModel):
    max_interactions: int = 40  # messages, as in the paper
    history: int = 0  # 0 = the paper's prompts (last utterance only); N = last N messages as context
    learner_farewell: bool = True  # the learner answers the teacher's FINISHED (as in the paper's example)
    strip_citations: bool = True  # remove crawl debris such as "[6]XTrustworthy Source...Go to source"
    learner_personas: list[str] = Field(default_factory=lambda: ["paper"])  # several: assigned round-robin
    max_clarifications_per_step: int = Field(default=2, ge=0)  # then the manager moves on to the next step
    manager: str = "rules"  # workflow/manager.py MANAGERS: rules (Algorithm 1) | llm (a model classifies)
    manager_model: str = ""  # spec of the llm manager's model; "" = the teacher's
    posttest: bool = True  # the learner's post-test (and the cached pre-test) after each conversation
    posttest_prompt: str = "v2"  # workflow/posttest.py PROMPTS: the tests' wording (docs/guides/posttest.md)


class ReplicaSettings(BaseModel):
    """Server replicas and outages (wikihowagent/backends/replicas.py); transport only, not in a run's fingerprint."""

    fail_threshold: int = 3  # connection errors in a row before a replica is rested
    rest_s: float = 2.0  # first rest; doubles per failed probe
    rest_max_s: float = 60.0
    outage_wait_s: float = 120.0  # with every replica down, requests wait (probing) this long before failing


class Config(BaseModel):
    model: ModelSettings = Field(default_factory=ModelSettings)
    local: LocalModelSettings = Field(default_factory=LocalModelSettings)
    workflow: WorkflowSettings = Field(default_factory=WorkflowSettings)
    replicas: ReplicaSettings = Field(default_factory=ReplicaSettings)
    concurrency: int = 2
    runs_dir: str = "runs"
    prompts: str = ""  # path of a prompts YAML; empty = wikihowagent/configs/prompts.yaml
    models: str = ""  # path of the model alias file; empty = wikihowagent/configs/models.yaml
    personas: str = ""  # path of the learner personas YAML; empty = wikihowagent/configs/personas.yaml


class ConfigError(WikihowagentError, ValueError):
    pass


def default_config_path() -> Path:
    return resource_path("configs", "default.yaml")


def resource_path(*parts: str) -> Path:
    """A file bundled with the package (`configs/...`, `data/...` under `wikihowagent/`), found through
    importlib.resources the same way from a clone, an editable install, a wheel and an sdist."""
    root = resources.files("wikihowagent")
    if not isinstance(root, Path):  # a zipped install: the loaders walk folders and open files by path
        raise ConfigError(
            f"wikihowagent's bundled files are inside an archive ({root}); install it unzipped (pip install)"
        )
    return root.joinpath(*parts)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def load_config(
    path: Path | None = None, overrides: dict[str, Any] | None = None, preset: dict[str, Any] | None = None
) -> Config:
    """Defaults <- wikihowagent/configs/default.yaml <- a preset's layer <- the user's file <- CLI overrides (None ignored)."""
    data: dict[str, Any] = {}
    default = default_config_path()
    if default.exists():
        data = read_yaml(default)
    if preset:
        data = _merge(data, preset)
    if path is not None:
        data = _merge(data, read_yaml(Path(path)))
    if overrides:
        data = _merge(data, _drop_none(overrides))
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path or default}: {validation_line(exc)}") from None


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            v = _drop_none(v)
            if v:
                out[k] = v
        elif v is not None:
            out[k] = v
    return out
