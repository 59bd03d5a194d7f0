"""A person in the loop: the conversation graph with the human's role answered through `interrupt`.

The graph is compiled with an in-memory checkpointer; each time the human's node runs, it interrupts with a
request (role, step, the other agent's last message) and the session resumes it with the typed text
(`Command(resume=text)`). Commands: `/next` (learner: ask for the next step; teacher: give the step's own
text), `/step` (show the step being taught), `/help`, `/quit` (or Ctrl-C, or end of input: the conversation
so far is saved). The record goes to a run directory like `generate`'s, with the human's role marked.
"""

from __future__ import annotations

import asyncio
import signal
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

from wikihowagent.config import load_config
from wikihowagent.corpus.core import default_tutorials_path, load_tutorials
from wikihowagent.errors import WikihowagentError
from wikihowagent.generation.core import package_versions, to_record
from wikihowagent.jsonlio import JsonlAppender
from wikihowagent.layout import CONVERSATIONS
from wikihowagent.outdir import check_writable
from wikihowagent.records import ConversationRecord, Tutorial, make_conversation_id
from wikihowagent.runs import RunInfo, now, write_run_info
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.prompts import PromptTemplates, load_prompts

ROLES = ("learner", "teacher")
HELP = "/next  move on (learner: ask for the next step; teacher: give the step's text)  ·  /step  show the step  ·  /quit  save and leave"
LEARNER_NEXT = "Thanks, I understand. Let's go to the next step."
# The record types the checkpointer stores between interrupts (LangGraph refuses unlisted types).
CHECKPOINT_TYPES = [
    ("wikihowagent.records", "Turn"),
    ("wikihowagent.records", "Tutorial"),
    ("wikihowagent.workflow.personas", "Persona"),
]


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
        self.graph = build_graph(
            teacher,
            learner,
            self.prompts,
            self.options,
            checkpointer=InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)),
        )
        self.config = {
            "configurable": {"thread_id": self.conversation_id},
            "recursion_limit": recursion_limit(self.options),
        }

    async def run(self) -> None:
        self.show_step(0)
        payload: Any = initial_state(self.tutorial, self.conversation_id)
        while True:
            if not await self.model_turn(payload):
                self.quit = True
                self.console.print("\ninterrupted: saving what was said", markup=False)
                return
            snap = await self.graph.aget_state(self.config)
            self.show_messages(snap.values.get("messages", []))
            if not snap.interrupts:
                return  # the graph reached its end
            text = self.ask(snap.interrupts[0].value)
            if text is None:
                self.quit = True
                return
            payload = Command(resume=text)

    async def model_turn(self, payload: Any) -> bool:
        """Run the graph up to the person's next turn; False if Ctrl-C stopped the model mid-reply.

        While the model writes, Ctrl-C cancels this task (the graph, the HTTP request and LangChain's
        callbacks unwind as for any cancellation; the reply in progress is dropped, what was said before
        is in the checkpoint). At the prompt, Python's own handler stays: Ctrl-C interrupts input()."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        stopped = False

        def on_sigint() -> None:
            nonlocal stopped
            stopped = True
            if task is not None:
                task.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no Unix signals
            installed = False
        try:
            await self.graph.ainvoke(payload, self.config)
        except asyncio.CancelledError:
            if not stopped:
                raise
            if task is not None:
                task.uncancel()
            return False
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)  # back to Python's KeyboardInterrupt
        return not stopped

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
        self.console.print(
            Panel(body, title=Text(f"{self.tutorial.title} · Step {step + 1} of {n}"), border_style="cyan")
        )

    def show_messages(self, messages: list) -> None:
        for turn in messages[self.shown :]:
            if (
                self.role == "learner"
                and turn.role == "teacher"
                and turn.kind == "model"
                and turn.step != self.step_shown
            ):
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


# --------------------------------------------------------------------------- the stage


class ChatError(WikihowagentError, RuntimeError):
    """A problem that stops `chat` before the conversation (role, tutorial, config, backend); one line."""


@dataclass(frozen=True)
class ChatRequest:
    role: str = "learner"
    model: str = "local"
    tutorial: str | None = None
    tutorials: Path | None = None
    pick: bool = False
    out: Path | None = None
    config: Path | None = None
    base_url: str | None = None


@dataclass
class ChatSummary:
    record: ConversationRecord
    path: Path


def _choose(req: ChatRequest, items: list[Tutorial], console: Console, read: Callable[[str], str]) -> Tutorial:
    from rich.table import Table

    if req.tutorial:
        chosen = next((t for t in items if t.tutorial_id == req.tutorial), None)
        if chosen is None:
            raise ChatError(f"--tutorial {req.tutorial}: no such tutorial (list them with `wikihowagent tutorials`)")
        return chosen
    if not req.pick:
        raise ChatError("choose a tutorial: --tutorial ID or --pick")
    table = Table("#", "tutorial_id", "steps", "title / method")
    for i, t in enumerate(items, 1):
        table.add_row(str(i), t.tutorial_id, str(len(t.steps)), f"{t.title} / {t.method_title}")
    console.print(table)
    try:
        answer = read(f"tutorial number (1-{len(items)}) > ").strip()
    except (EOFError, KeyboardInterrupt):
        raise ChatError("no tutorial chosen") from None
    if not answer.isdigit() or not 1 <= int(answer) <= len(items):
        raise ChatError(f"{answer!r}: expected a number from 1 to {len(items)}")
    return items[int(answer) - 1]


def _cancel_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """As asyncio.run on its way out: cancel what a KeyboardInterrupt left running and let it unwind."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def _run_session(session: ChatSession, console: Console) -> None:
    """Run the session to its end; Ctrl-C ends it with what was said kept."""
    # Not asyncio.run: its SIGINT handler only cancels the task, which cannot interrupt a blocking
    # input(); with Python's default handler Ctrl-C raises KeyboardInterrupt at the prompt or mid-reply.
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(session.run())
    except KeyboardInterrupt:  # at the prompt (or between two model turns)
        session.quit = True
        console.print("\ninterrupted: saving what was said", markup=False)
    finally:
        try:
            _cancel_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())  # as asyncio.run: closes the HTTP sessions
        finally:
            loop.close()


def run_chat(req: ChatRequest, console: Console, read: Callable[[str], str]) -> ChatSummary:
    """One chat session: choose the tutorial, run the graph with the person in `req.role`, save the record.
    Raises ChatError (one line) for anything that stops it before the conversation."""
    from wikihowagent.backends import BackendError, check_backend, make_chat_model, resolve_spec, shutdown_local_servers

    if req.role not in ROLES:
        raise ChatError(f"--role {req.role!r}: expected learner or teacher")
    source = req.tutorials or default_tutorials_path()
    cfg = load_config(req.config)
    prompts = load_prompts(cfg.prompts or None)
    items = load_tutorials(source, clean_citations=cfg.workflow.strip_citations)
    if not items:
        raise ChatError(f"{source}: no tutorials with >= 2 steps")
    chosen = _choose(req, items, console, read)
    run_dir = req.out or Path(cfg.runs_dir) / f"chat-{req.role}-{chosen.tutorial_id}"
    check_writable(run_dir, "--out" if req.out else "the run folder")  # before the model is asked anything
    aliases = Path(cfg.models) if cfg.models else None
    resolved = resolve_spec(req.model, aliases)
    url = req.base_url if resolved.provider == "openai" else None
    check_backend(resolved, url)
    name = run_dir.name
    other = "learner" if req.role == "teacher" else "teacher"
    teacher, learner = ("human", req.model) if req.role == "teacher" else (req.model, "human")
    options = WorkflowOptions.from_config(cfg, human=req.role)
    started = now()
    cid = make_conversation_id(name, f"{chosen.tutorial_id}/{started}")  # one record per session
    console.print(
        f"You are the {req.role}; the model ({req.model}) is the {other}. " + HELP, markup=False, highlight=False
    )
    try:
        llm = make_chat_model(resolved, cfg.model, cfg.local, base_url=url)
        session = ChatSession(chosen, req.role, llm, prompts, options, cid, console, read=read)
        _run_session(session, console)
        state = session.state()
    except BackendError as exc:
        raise ChatError(str(exc)) from None
    finally:
        shutdown_local_servers()
    record = to_record(chosen, state, name, teacher, learner, started, options).model_copy(
        update={"conversation_id": cid, "human": req.role}
    )
    info = RunInfo(
        name=name,
        teacher=teacher,
        learner=learner,
        evaluator=req.model,
        human=req.role,
        resolved={other: resolved.model_dump() | ({"base_url": url} if url else {})},
        tutorials_source=str(source),
        started_at=started,
        ended_at=now(),
        status="complete",
        versions=package_versions(),
    )
    return ChatSummary(record=record, path=save_chat(run_dir, record, info))
