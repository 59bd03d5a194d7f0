"""Named presets (`--preset NAME` of generate, evaluate and sweep files): a config layer between
wikihowagent/configs/default.yaml and the user's --config file, plus the evaluate mode it implies.

Adding a preset = one entry in PRESETS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikihowagent.errors import WikihowagentError


@dataclass(frozen=True)
class Preset:
    description: str
    config: dict[str, Any] = field(
        default_factory=dict
    )  # merged over wikihowagent/configs/default.yaml, under --config
    compat: str | None = None  # evaluate's metric definitions


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        description="the paper's prompts verbatim (wikihowagent/configs/prompts-paper.yaml), max tokens 4096, temperature 0, "
        "no conversation history, no post-test; evaluate with --compat paper",
        config={
            "model": {"max_tokens": 4096, "temperature": 0.0},
            "local": {"max_tokens": 4096},
            "workflow": {"history": 0, "max_interactions": 40, "posttest": False},
            "prompts": "@configs/prompts-paper.yaml",
        },
        compat="paper",
    ),
}


class PresetError(WikihowagentError, ValueError):
    pass


def get_preset(name: str | None) -> Preset | None:
    if name is None:
        return None
    if name not in PRESETS:
        raise PresetError(f"--preset {name!r}: unknown preset; known: {', '.join(PRESETS)}")
    return PRESETS[name]


def preset_config(name: str | None) -> dict[str, Any]:
    """The preset's config layer, with `@configs/...` resolved to the bundled file (`wikihowagent/configs/`)."""
    from wikihowagent.config import resource_path

    p = get_preset(name)
    if p is None:
        return {}
    cfg = dict(p.config)
    if isinstance(cfg.get("prompts"), str) and cfg["prompts"].startswith("@"):
        cfg["prompts"] = str(resource_path(*cfg["prompts"][1:].split("/")))
    return cfg
