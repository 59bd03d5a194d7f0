"""The commands' terminal output.

Messages carry outside text — paths, server error messages, model output, run and tutorial names — so
every console prints literally: Rich markup (`[/b]`) and emoji codes (`:100:`) are off, and styles are
applied with `rich.text.Text` (`labeled`), never by markup in a format string. Status lines on stderr are
never wrapped at the console width (a log file or CI capture keeps one line per message).
"""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.text import Text


def make_console(stderr: bool = True) -> Console:
    """A console that prints outside text literally; stderr consoles also never wrap lines."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=stderr)


def labeled(label: str, style: str, message: str) -> Text:
    """`label` in `style`, a space, then `message` as is (no markup, no emoji codes)."""
    return Text.assemble((label, style), " ", message)


def print_labeled(console: Console, label: str, style: str, message: str) -> None:
    console.print(labeled(label, style, message), soft_wrap=True)


def print_error(message: str, console: Console | None = None) -> None:
    """One error line on stderr (no stack trace), printed literally."""
    print_labeled(console or make_console(), "error:", "bold red", message)


def _size(n: int | float | None) -> str:
    if n is None:
        return "unknown"
    if n < 1024:
        return f"{int(n)} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            break
    return f"{n:.1f} {unit}"


def disk_full_message(path: Path | str, needed: int | None, exc: OSError) -> str | None:
    """The one line for a write to `path` that failed because the disk (or quota) is full, naming the free
    space it needed (`needed` bytes, if known); None if `exc` is another error."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    try:
        free: int | None = shutil.disk_usage(Path(path).parent).free
    except OSError:
        free = None
    need = f"{_size(needed)} more free space needed" if needed is not None else "more free space needed"
    return f"{path}: no space left on device: {need} ({_size(free)} free); free some space and rerun the same command to resume"


@contextlib.contextmanager
def progress_bar(console: Console, total: int, description: str) -> Iterator[Callable[[int], None]]:
    """A progress bar (done/total, elapsed, ETA) on `console`; yields `advance(n)`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}", markup=False, style="bold"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n: prog.advance(task, n)
