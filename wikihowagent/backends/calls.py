"""One chat call on the hot path: `await achat(model, messages)` -> the reply message.

`model.ainvoke(messages)` sets up LangChain's per-call machinery (a callback manager and run managers, the
invocation params for tracing, the LLM cache lookup, message ids): ~0.2 ms of CPU per call, a tenth of the
whole client budget per message at scale. Models that declare `direct_calls = True` (the replica pool, the
lean OpenAI-compatible client) are called through their `_agenerate` instead, when nothing would observe the
difference: no tracing (LangSmith) enabled, no callbacks on the model or in the running graph's config, no
LLM cache, no rate limiter. The reply carries the same content, usage_metadata and response_metadata
(generation info such as finish_reason and logprobs merged in, as LangChain does); only the LangChain
run id in `message.id` is not set. The direct call uses LangChain's private API: only with the exact
versions it was written against (`private_api.private_api_ok()`), else `ainvoke`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from .private_api import private_api_ok
from .registry import capabilities


def _observed(model: BaseChatModel) -> bool:
    """True if a direct call could skip something: tracing, callbacks, a cache, a rate limiter, v1 output."""
    if (
        model.callbacks
        or model.cache not in (None, False)
        or getattr(model, "rate_limiter", None) is not None
        or getattr(model, "output_version", None) == "v1"
    ):
        return True
    from langchain_core.globals import get_llm_cache

    if model.cache is None and get_llm_cache() is not None:
        return True
    from langchain_core.tracers.context import _tracing_v2_is_enabled

    if _tracing_v2_is_enabled():
        return True
    from langchain_core.runnables.config import var_child_runnable_config

    config = var_child_runnable_config.get() or {}
    callbacks: Any = config.get("callbacks")
    handlers = getattr(callbacks, "handlers", callbacks) or []  # a callback manager or a list of handlers
    return bool(handlers)


async def achat(model: BaseChatModel, messages: list[BaseMessage]) -> AIMessage:
    """`model`'s reply to `messages` (see the module docstring)."""
    if not getattr(model, "direct_calls", False) or not private_api_ok() or _observed(model):
        return await model.ainvoke(messages)
    from langchain_core.language_models.chat_models import _gen_info_and_msg_metadata

    result = await model._agenerate(messages)
    generation = result.generations[0]
    message = generation.message
    if not isinstance(message, AIMessage):  # what `ainvoke` returns too (it says AIMessage; a chat model makes one)
        raise TypeError(f"{type(model).__name__} replied with a {type(message).__name__}, not an AIMessage")
    # as BaseChatModel._agenerate_with_cache: the generation info, then the run's llm_output
    message.response_metadata = _gen_info_and_msg_metadata(generation)
    if len(result.generations) == 1 and result.llm_output is not None:
        message.response_metadata = {**result.llm_output, **message.response_metadata}
    return message


def with_reply_cap(model: BaseChatModel, tokens: int) -> BaseChatModel:
    """`model` allowed replies of at least `tokens` tokens: a copy with its reply cap raised, never lowered.

    For a call whose answer has a known length (the post-test's N steps) and must not be cut by the
    conversation's reply cap (`--max-tokens`). A model with no cap field (a scripted test model), or whose cap
    is unset (no cap) or already large enough, is returned as it is; for a model whose unset cap means "its
    parts' caps" (`Capabilities.reply_cap_inherited`, the replica pool) the copy's cap applies to every call. A copy, not
    `bind`: a binding would hide the model's `direct_calls` path (achat) and Ollama takes no `max_tokens`
    argument."""
    caps = capabilities(model)
    name = caps.reply_cap
    if name is None:
        return model
    current = getattr(model, name)
    if current is None and not caps.reply_cap_inherited:
        return model
    if current is not None and current >= tokens:
        return model
    return model.model_copy(update={name: tokens})
