"""The LangChain / openai private API the hot path uses, and the exact versions it was written against.

Two speed-ups reach under the public API: `calls.achat` calls a model's `_agenerate` directly (skipping
`ainvoke`'s per-call machinery; it reads `langchain_core`'s `_tracing_v2_is_enabled` and
`_gen_info_and_msg_metadata`), and `lean_openai.LeanChatOpenAI` reuses ChatOpenAI's `_get_request_payload`,
`_use_responses_api`, `_create_chat_result`, langchain-openai's error mapping and the SDK's
`_make_status_error_from_response`. A minor release may rename any of them, so pyproject.toml pins
`TESTED` exactly, and `private_api_ok()` checks, once per process on first use, that the installed versions
are these and that every name is there. Otherwise every call takes the public path — `model.ainvoke` and
ChatOpenAI's own SDK transport — which gives the same replies at a higher CPU cost per call.
"""

from __future__ import annotations

from functools import lru_cache

# distribution -> the exact version the private path is written against (pinned in pyproject.toml)
TESTED: dict[str, str] = {"langchain-core": "1.8.3", "langchain-openai": "1.8.1", "openai": "3.57.0"}

# (module, attribute path) of every private name used
PRIVATE_NAMES: tuple[tuple[str, str], ...] = (
    ("langchain_core.tracers.context", "_tracing_v2_is_enabled"),
    ("langchain_core.language_models.chat_models", "_gen_info_and_msg_metadata"),
    ("langchain_core.language_models.chat_models", "BaseChatModel._agenerate"),
    ("langchain_core.runnables.config", "var_child_runnable_config"),
    ("langchain_openai.chat_models.base", "_handle_openai_api_error"),
    ("langchain_openai.chat_models.base", "_handle_openai_bad_request"),
    ("langchain_openai", "ChatOpenAI._get_request_payload"),
    ("langchain_openai", "ChatOpenAI._use_responses_api"),
    ("langchain_openai", "ChatOpenAI._create_chat_result"),
    ("openai", "AsyncOpenAI._make_status_error_from_response"),
)


def problems() -> list[str]:
    """Why the private path cannot be used here ([] = it can): a version other than TESTED, a name missing."""
    import importlib
    from importlib import metadata

    out = []
    for dist, want in TESTED.items():
        try:
            have = metadata.version(dist)
        except metadata.PackageNotFoundError:
            have = "not installed"
        if have != want:
            out.append(f"{dist} {have} (the private path is written against {want})")
    for module, path in PRIVATE_NAMES:
        try:
            obj = importlib.import_module(module)
            for part in path.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            out.append(f"{module}.{path} is missing")
    return out


@lru_cache(maxsize=1)
def private_api_ok() -> bool:
    """True if the installed LangChain / openai are the TESTED versions with every private name in place."""
    return not problems()
