"""`wikihowagent chat`: a person plays the teacher or the learner against the model, through the same graph.

- `core`     the session: the conversation graph with LangGraph's human-in-the-loop interrupt, the
             `/next`, `/step`, `/quit` commands, and the saved run directory (one normal record)
- `command`  the thin typer command registered by `wikihowagent.cli`
"""
