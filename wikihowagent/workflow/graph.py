"""The teacher–learner conversation graph (the paper's Algorithm 1) as a LangGraph `StateGraph`.

Nodes: `teacher` and `learner` produce one message each; `manager` owns the bookkeeping of Algorithm 1
(advance the step or flag a clarification after each learner message, detect the end) and routes to
the next node; after a teacher message the same routing applies directly (there is nothing to manage).
The agents' chat models are built once per run and closed over; one compiled graph serves every
tutorial.

Departures from the released code, each a fix of a quirk the paper's own Algorithm does not need:
- the learner's acknowledgement of the fixed BEGIN turn does not advance the step, so step 1 is taught;
- a question right after BEGIN is not a "clarification" (no step has been presented yet);
- `history > 0` shows the agents the last N messages (the paper: only the last utterance).

Additions: the learner's persona (workflow/personas.py) decides each learner turn's intent with a seeded
policy; at most `max_clarifications_per_step` questions are answered per step; every model reply passes the
turn checks (workflow/checks.py: empty, echo, wrong role), retried once with a reminder, then an empty reply
fails the conversation and the other problems stay as a warning on the turn. With a `PostTester`, a
`posttest` node runs after the conversation's last message (FINISHED and the learner's farewell, or the
interaction limit / the learner stopping; not after a failure): the learner model writes the method's steps
from memory (workflow/posttest.py), stored in the state's `posttest`, never as a turn.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from wikihowagent.backends.calls import achat
from wikihowagent.config import Config
from wikihowagent.errors import WikihowagentError
from wikihowagent.records import PostTest, Turn, Tutorial, conversation_lines
from wikihowagent.workflow.checks import EMPTY, check_turn, reminder
from wikihowagent.workflow.manager import Manager, RulesManager, asks_question  # noqa: F401 (re-exported)
from wikihowagent.workflow.personas import Persona
from wikihowagent.workflow.posttest import PostTester
from wikihowagent.workflow.prompts import PromptTemplates


class ConversationState(TypedDict, total=False):
    messages: Annotated[list[Turn], operator.add]
    tutorial: Tutorial
    current_step: int  # 0-based index of the step under discussion
    step_presented: bool  # the teacher has presented `current_step` (False right after BEGIN / advancing)
    needs_clarification: bool
    finished: bool  # the teacher has closed with FINISHED
    error: str | None
    conversation_id: str  # seeds the persona's question policy
    persona: Persona | None  # None = the prompts file's learner (the paper)
    clarifications: int  # questions answered at `current_step`
    labels: Annotated[list[tuple[int, str, bool]], operator.add]  # (message index, manager label, fell back)
    stopped: bool  # the manager classified a learner message as wants-to-stop
    posttest: PostTest | None  # the learner's post-test, taken by the `posttest` node (not a turn)


@dataclass(frozen=True)
class WorkflowOptions:
    max_interactions: int = 40  # messages, teacher and learner together
    history: int = 0
    learner_farewell: bool = True
    max_clarifications_per_step: int = 2
    seed: int = 42  # of the personas' question policy
    human: str | None = None  # "teacher" | "learner": a person plays that role (`wikihowagent chat`)

    @classmethod
    def from_config(cls, cfg: Config, human: str | None = None) -> WorkflowOptions:
        """The options of a config's `workflow` section (and its model's seed): `generate` and `chat`."""
        w = cfg.workflow
        return cls(
            max_interactions=w.max_interactions,
            history=w.history,
            learner_farewell=w.learner_farewell,
            max_clarifications_per_step=w.max_clarifications_per_step,
            seed=cfg.model.seed,
            human=human,
        )


def format_history(turns: list[Turn], n: int, header: str) -> str:
    if n <= 0 or not turns:
        return ""
    lines = "\n".join(conversation_lines(turns[-n:]))
    return f"{header}{lines}\n\n"


async def _call(model: BaseChatModel, messages: list[BaseMessage]) -> tuple[str, int, int, float]:
    start = time.perf_counter()
    reply = await achat(model, messages)
    latency = time.perf_counter() - start
    usage: dict[str, Any] = dict(reply.usage_metadata or {})
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    return text.strip(), int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), latency


class EmptyReplyError(WikihowagentError, RuntimeError):
    pass


async def checked_call(
    model: BaseChatModel, messages: list[BaseMessage], role: str, other_last: str | None
) -> tuple[str, dict[str, Any]]:
    """`_call` plus the turn checks: one retry with a reminder; returns the text and the Turn fields.

    Raises EmptyReplyError if the reply is still empty after the retry.
    """
    text, p_tok, c_tok, latency = await _call(model, messages)
    problem = check_turn(role, text, other_last)
    retried, warnings = [], []
    if problem is not None:
        last = messages[-1]
        nudged = [*messages[:-1], HumanMessage(content=f"{last.content}\n\n{reminder(role, problem)}")]
        text, p2, c2, l2 = await _call(model, nudged)
        p_tok, c_tok, latency = p_tok + p2, c_tok + c2, latency + l2
        retried = [problem]
        again = check_turn(role, text, other_last)
        if again == EMPTY:
            raise EmptyReplyError(f"{role}: empty reply (also after a retry)")
        warnings = [again] if again else []
    return text, dict(
        prompt_tokens=p_tok, completion_tokens=c_tok, latency_s=round(latency, 3), retried=retried, warnings=warnings
    )


def _failure(role: str, exc: Exception) -> str:
    if isinstance(exc, EmptyReplyError):
        return str(exc)
    return f"{role}: {type(exc).__name__}: {exc}".splitlines()[0]


def human_turn(state: ConversationState, role: str, kind: str = "model") -> Turn:
    """A person's turn: LangGraph's interrupt hands the request out and resumes with the typed text."""
    tut, messages = state["tutorial"], state.get("messages", [])
    step = min(state.get("current_step", 0), len(tut.steps) - 1)
    text = interrupt(
        {
            "role": role,
            "step": step,
            "num_steps": len(tut.steps),
            "step_text": tut.steps[step],
            "clarification": bool(state.get("needs_clarification")),
            "last": messages[-1].text if messages else "",
        }
    )
    return Turn(role=role, text=str(text).strip(), step=step, kind=kind, intent="human" if role == "learner" else None)


def build_graph(
    teacher: BaseChatModel | None,
    learner: BaseChatModel | None,
    prompts: PromptTemplates,
    options: WorkflowOptions,
    manager: Manager | None = None,
    checkpointer: Any = None,
    posttest: PostTester | None = None,
):
    """Compile the conversation graph. Invoke it with `initial_state(tutorial)`.

    `manager` classifies each learner message (workflow/manager.py; default: the paper's rules). With
    `options.human`, that role's node interrupts for a person's text (needs a `checkpointer`). With
    `posttest`, the conversation ends in the `posttest` node (None: no post-test)."""
    manager = manager or RulesManager()
    route = make_route(options, posttest)
    graph = StateGraph(ConversationState)
    graph.add_node("teacher", make_teacher_node(teacher, prompts, options))
    graph.add_node("learner", make_learner_node(learner, prompts, options))
    graph.add_node("manager", make_manager_node(manager, options))
    ends: dict[Hashable, str] = {END: END}
    if posttest is not None:
        graph.add_node("posttest", make_posttest_node(posttest))
        graph.add_edge("posttest", END)
        ends["posttest"] = "posttest"
    graph.add_edge(START, "teacher")
    # The manager acts on learner messages only: after a teacher message the graph routes directly (one
    # LangGraph superstep less per teacher message, ~0.4 ms of client CPU at scale).
    graph.add_conditional_edges("teacher", route, {"learner": "learner", **ends})
    graph.add_edge("learner", "manager")
    graph.add_conditional_edges("manager", route, {"teacher": "teacher", "learner": "learner", **ends})
    return graph.compile(checkpointer=checkpointer)


def make_teacher_node(teacher: BaseChatModel | None, prompts: PromptTemplates, options: WorkflowOptions) -> Any:
    """The teacher's node: BEGIN, FINISHED after the last step, else the model (or a person) presents or
    clarifies the current step."""

    async def teacher_node(state: ConversationState) -> dict[str, Any]:
        tut, messages, step = state["tutorial"], state.get("messages", []), state.get("current_step", 0)
        if not messages:
            text = prompts.begin.format(method_title=tut.method_title)
            return {"messages": [Turn(role="teacher", text=text, step=0, kind="begin")]}
        if step >= len(tut.steps):
            turn = Turn(role="teacher", text=prompts.finish, step=len(tut.steps) - 1, kind="finish")
            return {"messages": [turn], "finished": True}
        clarification = bool(state.get("needs_clarification"))
        if options.human == "teacher":
            turn = human_turn(state, "teacher", "clarification" if clarification else "model")
            return {"messages": [turn], "needs_clarification": False, "step_presented": True}
        prompt = prompts.teacher_messages(
            summary=tut.summary,
            step_index=step + 1,
            num_steps=len(tut.steps),
            step_content=tut.steps[step],
            user_utterance=messages[-1].text,
            history=format_history(messages[:-1], options.history, prompts.history_header),
            clarification=clarification,
        )
        if teacher is None:  # built without a model only when a person takes the role (returned above)
            raise ValueError("the teacher has neither a model nor a person")
        try:
            text, fields = await checked_call(teacher, prompt, "teacher", messages[-1].text)
        except Exception as exc:  # recorded in the conversation's record; the run goes on
            return {"error": _failure("teacher", exc)}
        kind = "clarification" if clarification else "model"
        turn = Turn(role="teacher", text=text, step=step, kind=kind, **fields)
        return {"messages": [turn], "needs_clarification": False, "step_presented": True}

    return teacher_node


def make_learner_node(learner: BaseChatModel | None, prompts: PromptTemplates, options: WorkflowOptions) -> Any:
    """The learner's node: the model (or a person) answers, free or under its persona's intent."""

    async def learner_node(state: ConversationState) -> dict[str, Any]:
        if options.human == "learner":
            return {"messages": [human_turn(state, "learner")]}
        messages, tut = state["messages"], state["tutorial"]
        step = min(state.get("current_step", 0), len(tut.steps) - 1)
        history = format_history(messages[:-1], options.history, prompts.history_header)
        persona = state.get("persona")
        intent = learner_intent(state, options)
        if intent == "free" or persona is None:
            prompt = prompts.learner_messages(instruction=messages[-1].text, history=history)
        else:
            prompt = persona.messages(
                intent, instruction=messages[-1].text, history=history, step_index=step + 1, num_steps=len(tut.steps)
            )
        if learner is None:  # built without a model only when a person takes the role (returned above)
            raise ValueError("the learner has neither a model nor a person")
        try:
            text, fields = await checked_call(learner, prompt, "learner", messages[-1].text)
        except Exception as exc:
            return {"error": _failure("learner", exc)}
        return {"messages": [Turn(role="learner", text=text, step=step, intent=intent, **fields)]}

    return learner_node


def make_manager_node(manager: Manager, options: WorkflowOptions) -> Any:
    """The manager's node (Algorithm 1, lines 14-18)."""

    async def manager_node(state: ConversationState) -> dict[str, Any]:
        """Algorithm 1, lines 14-18: after a learner message, flag a clarification or advance.

        A question (or an off-topic message, which the teacher answers by teaching the step again) is
        answered at most `max_clarifications_per_step` times per step; wants-to-stop ends the conversation."""
        messages = state.get("messages", [])
        if state.get("error") or not messages or messages[-1].role != "learner" or state.get("finished"):
            return {}
        if not state.get("step_presented"):
            return {}  # the acknowledgement of BEGIN: the teacher now presents step 1
        step = state.get("current_step", 0)
        label, fell_back = await manager.classify(state["tutorial"].steps[step], messages[-2].text, messages[-1].text)
        out: dict[str, Any] = {"labels": [(len(messages) - 1, label, fell_back)]}
        asked = state.get("clarifications", 0)
        if label == "wants-to-stop":
            return {**out, "stopped": True}
        if label in ("question", "off-topic") and asked < options.max_clarifications_per_step:
            return {**out, "needs_clarification": label == "question", "clarifications": asked + 1}
        return {**out, "current_step": step + 1, "step_presented": False, "clarifications": 0}

    return manager_node


def make_posttest_node(posttest: PostTester) -> Any:
    """The post-test node: the learner's post-test after the conversation."""

    async def posttest_node(state: ConversationState) -> dict[str, Any]:
        tut = state["tutorial"]
        assert posttest is not None
        return {
            "posttest": await posttest.run(
                tut.tutorial_id, tut.title, tut.method_title, state["messages"], len(tut.steps)
            )
        }

    return posttest_node


def make_route(options: WorkflowOptions, posttest: PostTester | None) -> Any:
    """Where the graph goes after the teacher or the manager: `next_node`, with the post-test before END."""

    def route(state: ConversationState) -> str:
        target = next_node(state, options)
        if target == END and posttest is not None and not state.get("error") and state.get("messages"):
            return "posttest"
        return target

    return route


def next_node(state: ConversationState, options: WorkflowOptions) -> str:
    """The node after a message: END (error, stop, too long, finished), else the other role."""
    messages = state.get("messages", [])
    if state.get("error") or state.get("stopped") or len(messages) >= options.max_interactions:
        return END
    last = messages[-1]
    if state.get("finished"):
        # The learner may say goodbye to FINISHED; after that, the conversation is over.
        return "learner" if options.learner_farewell and last.role == "teacher" else END
    return "learner" if last.role == "teacher" else "teacher"


def learner_intent(state: ConversationState, options: WorkflowOptions) -> str:
    """The intent of the next learner turn (see workflow/personas.py)."""
    persona = state.get("persona")
    if persona is None or not persona.has_policy:
        return "free"
    if state.get("finished"):
        return "farewell"
    if not state.get("step_presented"):
        return "begin"
    return persona.intent(
        seed=options.seed,
        conversation_id=state.get("conversation_id", ""),
        step=state.get("current_step", 0),
        asked_at_step=state.get("clarifications", 0),
        limit=options.max_clarifications_per_step,
    )


def initial_state(tutorial: Tutorial, conversation_id: str = "", persona: Persona | None = None) -> ConversationState:
    return ConversationState(
        messages=[],
        tutorial=tutorial,
        current_step=0,
        step_presented=False,
        needs_clarification=False,
        finished=False,
        error=None,
        conversation_id=conversation_id,
        persona=persona,
        clarifications=0,
        labels=[],
        stopped=False,
        posttest=None,
    )


def recursion_limit(options: WorkflowOptions) -> int:
    # At most two supersteps per message (learner + manager); LangGraph's default limit (25) is too low.
    return 2 * options.max_interactions + 12  # + the post-test node


def mermaid(options: WorkflowOptions | None = None) -> str:
    """The graph's Mermaid diagram (no model is needed to draw it)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from wikihowagent.workflow.prompts import load_prompts

    dummy = FakeListChatModel(responses=[""])
    tester = PostTester(dummy, "", cache=None)  # drawn, never run
    return (
        build_graph(dummy, dummy, load_prompts(), options or WorkflowOptions(), posttest=tester)
        .get_graph()
        .draw_mermaid()
    )
