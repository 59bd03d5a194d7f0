"""The persona intents on the real embedded model: an `ask` prompt gives a question, `acknowledge` does not."""

from __future__ import annotations

import asyncio

import pytest

from wikihowagent.workflow.manager import asks_question
from wikihowagent.workflow.personas import load_personas

pytestmark = pytest.mark.slow

TEACHER = (
    "Step 2 of 4: Connect the clamps to the battery. Attach the red clamp to the positive terminal and the "
    "black clamp to the negative terminal or to an unpainted metal ground point."
)


def test_intents_steer_the_embedded_model():
    from wikihowagent.backends import make_chat_model, shutdown_local_servers
    from wikihowagent.config import load_config

    cfg = load_config(overrides={"model": {"max_tokens": 64}})
    model = make_chat_model("local", cfg.model, cfg.local)
    personas = load_personas()

    async def reply(persona: str, intent: str) -> str:
        msgs = personas[persona].messages(intent, instruction=TEACHER, history="", step_index=2, num_steps=4)
        return (await model.ainvoke(msgs)).content

    try:
        asked = asyncio.run(reply("curious", "ask"))
        moved_on = asyncio.run(reply("passive", "acknowledge"))
    finally:
        shutdown_local_servers()
    assert asks_question(asked), asked
    assert not asks_question(moved_on), moved_on
