"""Which server the judge of a run talks to.

`generate` records in run.json the provider, model and base URL each spec resolved to (teacher, learner,
evaluator). `evaluate` sends a run's conversations to that same endpoint unless told otherwise
(`--base-url`), and refuses — in one line — when the spec now resolves to another provider or model than
the one recorded: conversations are never sent somewhere the user did not choose (e.g. to OpenAI with the
OPENAI_API_KEY exported for other work, when the run was generated against a local vLLM).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .runner import EvaluateError

ROLES = ("evaluator", "teacher", "learner")


def _resolved_of(info: Any) -> dict[str, Any] | None:
    """run.json's `resolved` (role -> provider/model/base_url), from a RunInfo or a dict; None if absent."""
    resolved = info.get("resolved") if isinstance(info, dict) else getattr(info, "resolved", None)
    return resolved if isinstance(resolved, dict) and resolved else None


def recorded_endpoint(info: Any, spec: str) -> dict[str, Any] | None:
    """What `spec` resolved to when the run was generated (run.json `resolved`), or None if not recorded."""
    resolved = _resolved_of(info)
    if resolved is None:
        return None
    for role in ROLES:
        ep = resolved.get(role)
        if isinstance(ep, dict) and ep.get("spec") == spec:
            return ep
    return None


def judge_base_url(spec: str, info: Any, where: str, base_url: str | None, aliases: Path | None) -> str | None:
    """The base URL for the judge `spec` of the run described by `info` (None: the spec's own default).

    `--base-url` (`base_url`) wins; else the endpoint recorded for that spec. EvaluateError if the spec now
    names another provider or model than the recorded one.
    """
    if base_url:
        return base_url
    ep = recorded_endpoint(info, spec)
    legacy = _legacy_openai_base(info) if ep is None else None
    if ep is None and legacy is None:
        return None
    from wikihowagent.backends import BackendError, resolve_spec

    try:
        now = resolve_spec(spec, aliases)
    except BackendError as exc:
        raise EvaluateError(f"evaluator {spec!r}: {exc}") from None
    if ep is None:  # generate's --base-url applied to every openai: role, the evaluator's included
        return legacy if now.provider == "openai" and now.base_url is None else None
    then = f"{ep.get('provider')}:{ep.get('model')}"
    if (ep.get("provider"), ep.get("model")) != (now.provider, now.model):
        at = f" at {ep['base_url']}" if ep.get("base_url") else ""
        raise EvaluateError(
            f"{where}: the run's evaluator {spec!r} was {then}{at} when it was generated but now resolves to "
            f"{now.canonical}; pass --evaluator SPEC (and --base-url URL) to choose the judge explicitly"
        )
    return ep.get("base_url") or None


def _legacy_openai_base(info: Any) -> str | None:
    """For runs recorded before the evaluator's endpoint was: the server their openai: roles used."""
    resolved = _resolved_of(info)
    if resolved is None or "evaluator" in resolved:
        return None
    urls = {ep.get("base_url") for ep in resolved.values() if isinstance(ep, dict) and ep.get("provider") == "openai"}
    urls.discard(None)
    return urls.pop() if len(urls) == 1 else None


def judge_base_urls(
    specs: dict[str, str | None], sources: list[Any], base_url: str | None, aliases: Path | None
) -> dict[str, str | None]:
    """{judge spec: base URL} over all inputs (one judge per spec); EvaluateError if two runs recorded one spec
    at different servers."""
    urls: dict[str, str | None] = {}
    first: dict[str, str] = {}
    for src in sources:
        spec = specs.get(src.name)
        if not spec:
            continue
        url = judge_base_url(spec, src.info, str(src.path), base_url, aliases)
        if spec in urls and urls[spec] != url:
            raise EvaluateError(
                f"{src.path}: evaluator {spec!r} was served at {url or 'its default endpoint'} for this run but at "
                f"{urls[spec] or 'its default endpoint'} for {first[spec]}; evaluate them separately or pass --base-url"
            )
        urls.setdefault(spec, url)
        first.setdefault(spec, str(src.path))
    return urls
