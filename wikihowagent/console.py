"""The commands' terminal output.

Messages carry outside text — paths, server error messages, model output, run and tutorial names — so
every console prints literally: Rich markup (`[/b]`) and emoji codes (`:100:`) are off, and styles are
applied with `rich.text.Text` (`labeled`), never by markup in a format string. Status lines on stderr are
never wrapped at the console width (a log file or CI capture keeps one line per message).

`--help` (HelpCommand, HelpGroup: the `cls=` of every command of `cli.app`) never cuts an option's name. Typer lays
an options panel out as one Rich table (name | negative name | type | help) that Rich shrinks column by
column when the terminal is narrow, so at 80 columns (and whenever the help is piped: Rich then assumes
80) option names ended in `…` and the help got a 17-character column. Here each option is laid out by
hand: its names and metavar never wrap or shorten; the help text gets the rest of the line, or, when the
names are wider than NAME_COLUMN_MAX, the lines under them (as man pages do). The usage, the command's
help text and every piece of an option's help (default, range, required) are Typer's own
(typer.rich_utils); options are grouped by their `rich_help_panel=` into the PANELS below, in that order.
tests/core/test_cli_help.py checks every command's help at 80 columns and piped.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import inspect
import shutil
import sys
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, RenderableType
from rich.text import Text
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from wikihowagent.errors import OutputDirError, os_error_line

# What a console that cannot encode a character prints instead (a stdout or stderr in ASCII, Latin-1, a
# Windows code page, ...): the table's signs and arrows as ASCII, anything else as its accent-free form
# (NFKD: "café" -> "cafe", fullwidth letters -> ASCII) or "?". Rich draws ASCII boxes and progress bars by
# itself on such a console (its `ascii_only`), so a finished command's table never ends it with a traceback.
ASCII_FALLBACK = {
    "±": "+/-",
    "–": "-",
    "—": "--",
    "−": "-",
    "…": "...",
    "↑": "^",
    "↓": "v",
    "→": "->",
    "←": "<-",
    "★": "*",
    "✓": "v",
    "✗": "x",
    "×": "x",
    "≥": ">=",
    "≤": "<=",
    "≈": "~",
    "μ": "mu",
    "δ": "delta",
    "σ": "sd",
    "«": '"',
    "»": '"',
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "•": "*",
    "·": ".",
}
ENCODE_ERRORS = "wikihowagent-ascii"  # the codec error handler degrade_streams installs


def _ascii_for(ch: str) -> str:
    if ch in ASCII_FALLBACK:
        return ASCII_FALLBACK[ch]
    plain = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
    return plain if plain.isprintable() and plain else "?"


def _encode_fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(_ascii_for(ch) for ch in exc.object[exc.start : exc.end]), exc.end


def degrade_streams() -> None:
    """stdout and stderr that cannot encode every character (PYTHONIOENCODING=ascii, a Latin-1 or Windows
    code-page terminal) print what they cannot encode as ASCII (ASCII_FALLBACK) instead of raising
    UnicodeEncodeError after the work is done; a UTF-8 stream is left as it is. Called once by `main()`."""
    try:
        codecs.lookup_error(ENCODE_ERRORS)
    except LookupError:
        codecs.register_error(ENCODE_ERRORS, _encode_fallback)
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            utf = codecs.lookup(encoding).name.startswith("utf")
        except LookupError:
            utf = False
        reconfigure = getattr(stream, "reconfigure", None)
        if not utf and reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream keeps its setting
                reconfigure(errors=ENCODE_ERRORS)


def ascii_text(text: str) -> str:
    """`text` with every non-ASCII character as ASCII (ASCII_FALLBACK, else its accent-free form, else "?")."""
    return text if text.isascii() else "".join(ch if ch.isascii() else _ascii_for(ch) for ch in text)


def _ascii_rich_text(text: Text) -> Text:
    """A rich Text made ASCII with its styles kept on the characters they covered."""
    plain = text.plain
    if plain.isascii():
        return text
    starts = [0]
    for ch in plain:
        starts.append(starts[-1] + len(ch if ch.isascii() else _ascii_for(ch)))
    out = Text(ascii_text(plain), style=text.style, justify=text.justify, no_wrap=text.no_wrap, overflow=text.overflow)
    for span in text.spans:
        out.stylize(span.style, starts[span.start], starts[span.end])
    return out


def _ascii_renderable(obj: Any) -> Any:
    """Strings, Texts and a Table's title and cells made ASCII (before Rich measures them, so the columns of a
    table still line up when "±" becomes "+/-"); anything else as it is (the error handler covers it)."""
    from rich.table import Table

    if isinstance(obj, str):
        return ascii_text(obj)
    if isinstance(obj, Text):
        return _ascii_rich_text(obj)
    if isinstance(obj, Table):
        obj.title = _ascii_renderable(obj.title)
        for col in obj.columns:
            col.header = _ascii_renderable(col.header)
            col._cells = [_ascii_renderable(c) for c in col._cells]
    return obj


class _Console(Console):
    """A Console that, on a stream whose encoding is not UTF (Rich's `ascii_only`: ASCII boxes and bars),
    prints its strings, texts and tables in ASCII (ASCII_FALLBACK) rather than failing on "±" or "↑"."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.encoding.startswith("utf"):
            objects = tuple(_ascii_renderable(o) for o in objects)
        super().print(*objects, **kwargs)


def make_console(stderr: bool = True) -> Console:
    """A console that prints outside text literally; stderr consoles also never wrap lines; on a console
    that cannot print Unicode, ASCII (see `_Console`)."""
    return _Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=stderr)


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
def progress_bar(console: Console, total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """A progress bar (done/total, elapsed, ETA; total None: not known) on `console`; yields `advance(n)`."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}", markup=False, style="bold"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n: prog.advance(task, n)


# ------------------------------------------------------------------------------------------------------
# --help

# The panels the commands group their options into (rich_help_panel=), one vocabulary for every command,
# printed in this order (then "Options": --help and any option without a panel).
INPUTS = "Inputs"
SELECTION = "Selection"
METRICS = "Metrics"
MODELS = "Model and judge"
CONVERSATION = "Conversation"
POSTTEST = "Post-test"
STATISTICS = "Statistics"
OUTPUT = "Output"
CLUSTER = "Cluster, resume and speed"
PANELS = (INPUTS, SELECTION, METRICS, MODELS, CONVERSATION, POSTTEST, STATISTICS, OUTPUT, CLUSTER)


NAME_COLUMN_MAX = 30  # wider names print on a line of their own, their help indented under them
WIDTH_MAX = 100  # help lines wider than this are hard to read; a wider terminal gets this width
WIDTH_MIN = 60  # a narrower terminal (COLUMNS=1 printed only the panels' corners) gets help this wide, wrapped by it


def _names(param: TyperOption | TyperArgument, ctx: Any) -> Any:
    """The option's names (`--retry-failed / --no-retry-failed`, `--human, -H`) and its metavar/type,
    as one Rich Text that is never wrapped or shortened."""
    from typer import rich_utils

    text = Text(no_wrap=True, overflow="fold")
    if isinstance(param, TyperArgument):
        name = param.display_name_raw + ("..." if param.metavar is None and param.nargs != 1 else "")
        text.append(name, style="option")
    else:
        longs = [o for o in param.opts if o.startswith("--")]
        shorts = [o for o in param.opts if not o.startswith("--")]
        text.append(", ".join(longs + shorts), style="option")
        negatives = list(param.secondary_opts)
        if negatives:
            text.append(" / ")
            text.append(", ".join(negatives), style="negative_option")
    shown = param.display_type_rich(ctx=ctx)
    if shown and not (isinstance(param, TyperOption) and param.is_flag):
        text.append(" ")
        text.append(shown.replace(" range>", ">"), style="types")  # the range follows: [x>=1]
    limits = param._get_number_range_help_str()
    if limits:
        text.append(" ")
        text.append(rich_utils.RANGE_STRING.format(limits).strip(), style="types")
    return text


def _options_panel(name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Any) -> None:
    from rich.console import Group
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.table import Table
    from typer import rich_utils

    if not params:
        return
    rows = []
    for p in params:
        names = _names(p, ctx)
        if p.required:
            names = Text.assemble(
                Text(rich_utils.REQUIRED_SHORT_STRING, style=rich_utils.STYLE_REQUIRED_SHORT),
                " ",
                names,
                no_wrap=True,
                overflow="fold",
            )
        elif any(q.required for q in params):
            names = Text.assemble("  ", names, no_wrap=True, overflow="fold")
        pieces = rich_utils._get_parameter_help(param=p, ctx=ctx, markup_mode=markup_mode)  # a Columns of pieces
        texts = [x for x in pieces.renderables if isinstance(x, Text)]
        # one paragraph: "... [default: 2]" flows on
        help_: RenderableType = Text(" ").join(texts) if len(texts) == len(pieces.renderables) else pieces
        rows.append((names, help_))
    inner = console.width - 4  # the panel's border and padding
    cap = max(12, min(NAME_COLUMN_MAX, inner * 2 // 5))
    width = max((n.cell_len for n, _ in rows if n.cell_len <= cap), default=cap)
    parts: list[Any] = []
    for names, help_ in rows:
        if names.cell_len <= width:
            grid = Table.grid(padding=(0, 2), expand=True)
            grid.add_column(width=width, no_wrap=True)
            grid.add_column(ratio=1, overflow="fold")
            grid.add_row(names, help_)
            parts.append(grid)
        else:  # names wider than the column: a line of their own, the help under the help column
            parts.append(names)
            parts.append(Padding(help_, (0, 0, 0, width + 2)))
    console.print(
        Panel(
            Group(*parts),
            border_style=rich_utils.STYLE_OPTIONS_PANEL_BORDER,
            title=name,
            title_align=rich_utils.ALIGN_OPTIONS_PANEL,
        )
    )


def _commands_panel(group: TyperGroup, ctx: Any, markup_mode: Any, console: Any) -> None:
    """The group's commands, each with the first paragraph of its help as one paragraph (Typer's own panel
    keeps the docstring's line breaks in "rich" markup mode)."""
    from rich.panel import Panel
    from rich.table import Table
    from typer import rich_utils

    commands = [c for c in (group.get_command(ctx, n) for n in group.list_commands(ctx)) if c and not c.hidden]
    if not commands:
        return
    grid = Table.grid(padding=(0, 2), expand=True)
    grid.add_column(no_wrap=True, style=rich_utils.STYLE_COMMANDS_TABLE_FIRST_COLUMN)
    grid.add_column(ratio=1, overflow="fold")
    for c in commands:
        first = inspect.cleandoc(c.short_help or c.help or "").partition("\f")[0].split("\n\n")[0]
        grid.add_row(
            Text(c.name or ""), rich_utils._make_rich_text(text=" ".join(first.split()), markup_mode=markup_mode)
        )
    console.print(
        Panel(
            grid,
            border_style=rich_utils.STYLE_COMMANDS_PANEL_BORDER,
            title=rich_utils.COMMANDS_PANEL_TITLE,
            title_align=rich_utils.ALIGN_COMMANDS_PANEL,
        )
    )


def rich_help(obj: TyperCommand | TyperGroup, ctx: Any, markup_mode: Any) -> None:
    """Typer's rich_format_help with `_options_panel` for the arguments and options."""
    from rich.align import Align
    from rich.padding import Padding
    from typer import rich_utils

    console = rich_utils._get_rich_console()
    console.width = max(WIDTH_MIN, min(console.width, WIDTH_MAX))
    console.print(Padding(rich_utils.highlighter(obj.get_usage(ctx)), 1), style=rich_utils.STYLE_USAGE_COMMAND)
    if obj.help:
        console.print(
            Padding(Align(rich_utils._get_help_text(obj=obj, markup_mode=markup_mode), pad=False), (0, 1, 1, 1))
        )
    panels: dict[str, list[Any]] = {rich_utils.ARGUMENTS_PANEL_TITLE: [], rich_utils.OPTIONS_PANEL_TITLE: []}
    for p in obj.get_params(ctx):
        if getattr(p, "hidden", False):
            continue
        default = rich_utils.ARGUMENTS_PANEL_TITLE if isinstance(p, TyperArgument) else rich_utils.OPTIONS_PANEL_TITLE
        panels.setdefault(getattr(p, "rich_help_panel", None) or default, []).append(p)
    # the arguments first, the panels in PANELS' order, then "Options" (--help) last
    order = {name: i for i, name in enumerate((rich_utils.ARGUMENTS_PANEL_TITLE, *PANELS))}
    for name, params in sorted(
        panels.items(), key=lambda kv: (kv[0] == rich_utils.OPTIONS_PANEL_TITLE, order.get(kv[0], len(order)))
    ):
        _options_panel(name, params, ctx, markup_mode, console)
    if isinstance(obj, TyperGroup):
        _commands_panel(obj, ctx, markup_mode, console)
    if obj.epilog:
        text = rich_utils._make_rich_text(
            text=rich_utils._fix_linebreaks(obj.epilog.split("\n\n"), markup_mode), markup_mode=markup_mode
        )
        console.print(Padding(Align(text, pad=False), 1))


class HelpCommand(TyperCommand):
    """A Typer command whose `--help` keeps every option name whole (see the module's docstring), and which
    turns an output path that cannot be used into one `error:` line and exit 2 (errors.py: an OutputDirError a
    command did not catch, or an OSError such as a permission denied, a read-only file system or a file where a
    folder is needed, met anywhere in the command)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if self.rich_markup_mode is None:
            return super().format_help(ctx, formatter)
        rich_help(self, ctx, self.rich_markup_mode)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except OutputDirError as exc:
            print_error(str(exc))
            raise typer.Exit(2) from None
        except OSError as exc:
            line = os_error_line(exc)
            if line is None:  # e.g. a full disk: cli.main's line
                raise
            print_error(line)
            raise typer.Exit(2) from None


class HelpGroup(TyperGroup):
    """A Typer group (`wikihowagent`, `sweep`, `annotate`) with the same `--help` layout."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if self.rich_markup_mode is None:
            return super().format_help(ctx, formatter)
        rich_help(self, ctx, self.rich_markup_mode)
