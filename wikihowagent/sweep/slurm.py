"""`sweep slurm`: an sbatch array script (one task per cell x shard) and server start-up templates.

The array script runs `python -m wikihowagent sweep run FILE --task $SLURM_ARRAY_TASK_ID`: a task resumes
what an earlier attempt left (finished conversations are skipped), so the script is resubmitted as it is
after a failure or a kill, and a task that is already done exits at once. The last shard of a cell to
finish merges the cell.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from wikihowagent.layout import SWEEP_SBATCH
from wikihowagent.outdir import OutputDirError, check_writable

from .core import Sweep, SweepError

# Start a model server on the task's node and wait until it answers; sourced by the array script when the
# experiment file says `slurm: {server: NAME}`. They export OPENAI_BASE_URL / OLLAMA_HOST for the task.
SERVER_TEMPLATES: dict[str, str] = {
    "vllm": r"""# Start vLLM on this node and wait until /v1/models answers (set VLLM_MODEL; optional VLLM_ARGS).
: "${VLLM_MODEL:?set VLLM_MODEL, e.g. Qwen/Qwen2-7B-Instruct}"
VLLM_PORT=${VLLM_PORT:-$((8000 + ${SLURM_ARRAY_TASK_ID:-0} % 1000))}
vllm serve "$VLLM_MODEL" --port "$VLLM_PORT" ${VLLM_ARGS:-} > "vllm-${SLURM_JOB_ID:-local}.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null' EXIT
export OPENAI_BASE_URL="http://127.0.0.1:${VLLM_PORT}/v1"
for _ in $(seq 1 ${SERVER_WAIT_S:-900}); do
  curl -sf "$OPENAI_BASE_URL/models" > /dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "vLLM exited; see vllm-${SLURM_JOB_ID:-local}.log" >&2; exit 1; }
  sleep 1
done
curl -sf "$OPENAI_BASE_URL/models" > /dev/null || { echo "vLLM not ready after ${SERVER_WAIT_S:-900} s" >&2; exit 1; }
""",
    "ollama-singularity": r"""# The paper's setup: Ollama in a Singularity container on this node (set OLLAMA_SIF; models pulled into
# OLLAMA_MODELS beforehand with `ollama pull`). Waits until /api/tags answers.
: "${OLLAMA_SIF:?set OLLAMA_SIF to the ollama .sif image (singularity pull docker://ollama/ollama)}"
OLLAMA_PORT=${OLLAMA_PORT:-$((11434 + ${SLURM_ARRAY_TASK_ID:-0} % 1000))}
export OLLAMA_HOST="127.0.0.1:${OLLAMA_PORT}"
singularity exec --nv --env OLLAMA_HOST="$OLLAMA_HOST" ${OLLAMA_MODELS:+--env OLLAMA_MODELS="$OLLAMA_MODELS"} \
  "$OLLAMA_SIF" ollama serve > "ollama-${SLURM_JOB_ID:-local}.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null' EXIT
for _ in $(seq 1 ${SERVER_WAIT_S:-300}); do
  curl -sf "http://$OLLAMA_HOST/api/tags" > /dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "ollama exited; see ollama-${SLURM_JOB_ID:-local}.log" >&2; exit 1; }
  sleep 1
done
curl -sf "http://$OLLAMA_HOST/api/tags" > /dev/null || { echo "ollama not ready after ${SERVER_WAIT_S:-300} s" >&2; exit 1; }
""",
}

# experiment-file key -> sbatch option
SBATCH_KEYS = {
    "partition": "partition",
    "time": "time",
    "gres": "gres",
    "cpus": "cpus-per-task",
    "mem": "mem",
    "account": "account",
    "qos": "qos",
    "max_parallel": None,
}
# What each value may be. Besides, every value is shlex-quoted in the script (sbatch reads #SBATCH lines with
# shell-like quoting); a newline cannot be quoted in a comment line, so none gets that far.
_NAMES = re.compile(r"[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*")  # partition, account, qos (comma lists)
SBATCH_VALUES: dict[str, tuple[str, re.Pattern[str] | None]] = {
    "partition": ("a partition name or comma-separated names", _NAMES),
    "account": ("an account name", _NAMES),
    "qos": ("a QOS name", _NAMES),
    "time": (
        "a Slurm time limit (minutes, H:MM:SS, D-HH:MM:SS, UNLIMITED)",
        re.compile(r"\d+(-\d+)?(:\d+){0,2}|UNLIMITED|INFINITE|unlimited|infinite"),
    ),
    "gres": ("a GRES list such as gpu:1 or gpu:a100:2", re.compile(r"[A-Za-z0-9_.:/=+-]+(,[A-Za-z0-9_.:/=+-]+)*")),
    "mem": ("a memory size such as 16G or 16000M", re.compile(r"\d+[KMGTkmgt]?")),
    "cpus": ("a whole number >= 1", None),
    "max_parallel": ("a whole number >= 1", None),
}


def _check_value(sweep: Sweep, key: str, value: Any) -> str:
    what, pattern = SBATCH_VALUES[key]
    if pattern is None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    else:
        ok = isinstance(value, (str, int)) and not isinstance(value, bool) and pattern.fullmatch(str(value)) is not None
    if not ok:
        raise SweepError(f"{sweep.path}: slurm.{key}: expected {what}, got {value!r}")
    return str(value)


def check_slurm(sweep: Sweep, out: Path) -> dict[str, str]:
    """The experiment file's `slurm:` options, each checked for its type (one-line SweepError naming the
    file and key), and `out` checked for what an #SBATCH line cannot hold. Returns key -> value text."""
    opts = sweep.spec.slurm
    unknown = sorted(set(opts) - set(SBATCH_KEYS) - {"server", "setup"})
    if unknown:
        raise SweepError(
            f"{sweep.path}: slurm: unknown key {unknown[0]!r}; known: {', '.join([*SBATCH_KEYS, 'server', 'setup'])}"
        )
    server = opts.get("server")
    if server is not None and server not in SERVER_TEMPLATES:
        raise SweepError(f"{sweep.path}: slurm.server: {server!r} is not one of {', '.join(SERVER_TEMPLATES)}")
    setup = opts.get("setup")
    if setup is not None and not isinstance(setup, str):
        raise SweepError(f"{sweep.path}: slurm.setup: expected shell commands as a string, got {setup!r}")
    try:
        check_writable(out)
    except OutputDirError as exc:
        raise SweepError(str(exc)) from None
    logs = str(out.resolve())
    bad = next((c for c in logs if ord(c) < 32 or ord(c) == 127 or c == "\\"), None)
    if bad is not None:
        raise SweepError(
            f"--out {logs!r}: contains a control character or backslash ({bad!r}), which an "
            "#SBATCH line cannot hold; choose another directory"
        )
    return {k: _check_value(sweep, k, v) for k, v in opts.items() if k in SBATCH_VALUES and v is not None}


def write_slurm(sweep: Sweep, out: Path, python: str | None = None, preset: str | None = None) -> list[Path]:
    """Write `<out>/sweep.sbatch` and the server templates; returns the files written. `slurm.setup` is the
    one value written as it is: shell commands the user asks the script to run (e.g. `module load cuda`)."""
    values = check_slurm(sweep, out)
    opts = sweep.spec.slurm
    server = opts.get("server")
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    written = []
    for name, body in SERVER_TEMPLATES.items():
        p = out / f"start-{name}.sh"
        p.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
        written.append(p)
    n_tasks = len(sweep.tasks)
    array = f"0-{n_tasks - 1}" + (f"%{values['max_parallel']}" if "max_parallel" in values else "")

    def directive(flag: str, value: str) -> str:
        return f"#SBATCH {shlex.quote(f'--{flag}={value}')}"

    lines = [
        "#!/usr/bin/env bash",
        directive("job-name", f"wha-{sweep.spec.name}"),
        directive("array", array),
        directive("output", f"{(out / 'logs').resolve()}/%A_%a.out"),
    ]
    for key, flag in SBATCH_KEYS.items():
        if flag and key in values:
            lines.append(directive(flag, values[key]))
    py = python or sys.executable
    lines += [
        "# Generated by `wikihowagent sweep slurm`: one array task per cell x shard "
        f"({len(sweep.cells)} cells x {sweep.spec.shards} shards).",
        "# Resubmit as it is after a failure or a kill: finished conversations are kept, done tasks exit at once.",
        "set -euo pipefail",
        f"cd {shlex.quote(os.getcwd())}",
    ]
    if opts.get("setup"):
        lines.append(str(opts["setup"]))
    if server:
        lines.append(f"source {shlex.quote(str((out / f'start-{server}.sh').resolve()))}")
    lines.append(
        f"{shlex.quote(py)} -m wikihowagent sweep run {shlex.quote(str(sweep.path.resolve()))} "
        + (f"--preset {shlex.quote(preset)} " if preset else "")
        + '--task "$SLURM_ARRAY_TASK_ID"'
    )
    script = out / SWEEP_SBATCH
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for p in [script, *written]:
        p.chmod(0o755)
    return [script, *written]
