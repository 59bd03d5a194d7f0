"""A scripted chat model for unit tests of graph logic and for the orchestration benchmark.

It is never reachable from a model spec: real runs always use a real backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedChatModel(BaseChatModel):
    """Replies with `script(prompt_text)`; records every prompt it saw.

    `script` may raise to simulate a server error; `delay_s` simulates latency without blocking the loop.
    """

    script: Callable[[str], str]
    delay_s: float = 0.0
    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        self.prompts.append(prompt)
        text = self.script(prompt)
        usage = {
            "input_tokens": len(prompt.split()),
            "output_tokens": len(text.split()),
            "total_tokens": len(prompt.split()) + len(text.split()),
        }
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, usage_metadata=usage))])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self._reply(messages)
