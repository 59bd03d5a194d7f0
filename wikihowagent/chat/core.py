"""A person in the loop: the conversation graph with the human's role answered through `interrupt`.

The graph is compiled with an in-memory checkpointer; each time the human's node runs, it interrupts with a
request (role, step, the other agent's last message) and the session resumes it with the typed text
(`Command(resume=text)`). Commands: `/next` (learner: ask for the next step; teacher: give the step's own
text), `/step` (show the step being taught), `/help`, `/quit` (or Ctrl-C, or end of input: the conversation
so far is saved). The record goes to a run directory like `generate`'s, with the human's role marked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from wikihowagent.records import ConversationRecord, Tutorial
from wikihowagent.runs import CONVERSATIONS, JsonlAppender, RunInfo, write_run_info
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.prompts import PromptTemplates

ROLES = ("learner", "teacher")
HELP = "/next  move on (learner: ask for the next step; teacher: give the step's text)  ·  /step  show the step  ·  /quit  save and leave"
LEARNER_NEXT = "Thanks, I understand. Let's go to the next step."
# The record types the checkpointer stores between interrupts (LangGraph refuses unlisted types).
CHECKPOINT_TYPES = [("wikihowagent.records", "Turn"), ("wikihowagent.records", "Tutorial"),
                    ("wikihowagent.workflow.personas", "Persona")]


@dataclass
class ChatSession:
    """One conversation with a person in `role`; `read(prompt)` returns one typed line (EOFError = leave)."""

    tutorial: Tutorial
    role: str
    model: BaseChatModel
    prompts: PromptTemplates
    options: WorkflowOptions
    conversation_id: str
    console: Console
    read: Callable[[str], str]
    quit: bool = False
    shown: int = 0  # messages already on the screen
    step_shown: int = 0  # the step whose panel was shown last
    graph: Any = field(init=False)
    config: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        teacher, learner = (None, self.model) if self.role == "teacher" else (self.model, None)
        self.graph = build_graph(teacher, learner, self.prompts, self.options, checkpointer=InMemorySaver(
            serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)))
        self.config = {"configurable": {"thread_id": self.conversation_id},
                       "recursion_limit": recursion_limit(self.options)}

    async def run(self) -> None:
        self.show_step(0)
        await self.graph.ainvoke(initial_state(self.tutorial, self.conversation_id), self.config)
        while True:
            snap = await self.graph.aget_state(self.config)
            self.show_messages(snap.values.get("messages", []))
            if not snap.interrupts:
                return  # the graph reached its end
            text = self.ask(snap.interrupts[0].value)
            if text is None:
                self.quit = True
                return
            await self.graph.ainvoke(Command(resume=text), self.config)

    def state(self) -> dict[str, Any]:
        """What was said so far (also after Ctrl-C), for the record."""
        values = dict(self.graph.get_state(self.config).values)
        if self.quit:
            values["quit"] = True
        return values

    # -- terminal ---------------------------------------------------------------------------------------

    def show_step(self, step: int) -> None:
        n = len(self.tutorial.steps)
        body = Text(self.tutorial.steps[step])
        self.console.print(Panel(body, title=Text(f"{self.tutorial.title} · Step {step + 1} of {n}"),
                                 border_style="cyan"))

    def show_messages(self, messages: list) -> None:
        for turn in messages[self.shown:]:
            if self.role == "learner" and turn.role == "teacher" and turn.kind == "model" and turn.step != self.step_shown:
                self.step_shown = turn.step
                self.show_step(turn.step)
            who = "You" if turn.role == self.role else turn.role.capitalize()
            style = "bold green" if turn.role == self.role else "bold"
            line = Text(f"{who}: ", style=style)
            line.append(turn.text)  # model output: printed literally, never as markup
            self.console.print(line)
        self.shown = len(messages)

    def ask(self, request: dict[str, Any]) -> str | None:
        label = "your answer" if request.get("clarification") else "you"
        if self.role == "teacher" and request["step"] != self.step_shown:  # the step you are to teach now
            self.step_shown = request["step"]
            self.show_step(request["step"])
        while True:
            try:
                text = self.read(f"{label} ({self.role}) > ").strip()
            except (EOFError, KeyboardInterrupt):
                return None
            if not text:
                continue
            cmd = text.lower()
            if cmd == "/quit":
                return None
            if cmd == "/step":
                self.show_step(request["step"])
                continue
            if cmd in ("/help", "/?"):
                self.console.print(HELP, markup=False, highlight=False)
                continue
            if cmd == "/next":
                return LEARNER_NEXT if self.role == "learner" else f"Step {request['step'] + 1}: {request['step_text']}"
            if text.startswith("/"):
                self.console.print(f"unknown command {text}; {HELP}", markup=False, highlight=False)
                continue
            self.shown += 1  # the person's own line is already on the screen
            return text


def save_chat(run_dir: Path, record: ConversationRecord, info: RunInfo) -> Path:
    """Append the record to `run_dir/conversations.jsonl` and write run.json (a normal run directory)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with JsonlAppender(run_dir / CONVERSATIONS) as sink:
        sink.append(record)
    write_run_info(run_dir, info)
    return run_dir / CONVERSATIONS
