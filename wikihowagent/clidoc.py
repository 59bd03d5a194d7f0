"""The command-line reference of the documentation site, generated from the Typer app's command objects.

`scripts/docs_hooks.py` (a MkDocs hook) puts `markdown()` into docs/reference/cli.md at build time. It reads
the click command objects Typer builds (`typer.main.get_command`): names, arguments, options, their help,
types and defaults — never the `--help` text, whose layout (panels, wrapping) may change — so the site and
`--help` cannot disagree. `commands()` lists the same tree for the test that checks the built site.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

PROG = "wikihowagent"


@dataclass(frozen=True)
class Param:
    kind: str  # "argument" | "option"
    names: tuple[str, ...]  # an option's spellings (--x, -x, --no-x); an argument's metavar
    type: str
    help: str
    default: str
    required: bool
    multiple: bool
    panel: str = ""  # Typer's rich_help_panel, if the option sets one


@dataclass(frozen=True)
class CommandDoc:
    path: tuple[str, ...]  # ("wikihowagent", "sweep", "run")
    help: str
    usage: str
    params: tuple[Param, ...] = field(default_factory=tuple)
    subcommands: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def anchor(self) -> str:
        return "-".join(self.path)


def root() -> Any:
    """The `wikihowagent` click group (Typer's `get_command` on the app)."""
    import typer

    from wikihowagent.cli import app

    return typer.main.get_command(app)


def _default(param: Any) -> str:
    value = param.default
    if param.param_type_name != "option" or value is None or callable(value) or param.required:
        return ""
    if getattr(param, "is_flag", False) and param.secondary_opts:  # --x/--no-x
        return (param.opts[0] if value else param.secondary_opts[0]) if isinstance(value, bool) else ""
    if getattr(param, "is_flag", False) and value is False:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) if value else ""
    return str(getattr(value, "value", value))


def _param(param: Any, ctx: Any) -> Param:
    kind = param.param_type_name
    if kind == "argument":
        names = ((param.metavar or param.name or "").upper(),)
    else:
        names = tuple(param.opts) + tuple(param.secondary_opts)
    type_name = str(param.display_type(ctx)).strip("<>") if hasattr(param, "display_type") else ""
    if getattr(param, "is_flag", False):
        type_name = "flag"
    return Param(
        kind,
        names,
        type_name,
        " ".join((getattr(param, "help", None) or "").split()),
        _default(param),
        bool(param.required),
        bool(getattr(param, "multiple", False) or param.nargs == -1),
        str(getattr(param, "rich_help_panel", None) or ""),
    )


def commands() -> list[CommandDoc]:
    """Every command of the CLI, depth first in registration order, with its visible parameters."""
    from typer._click.core import Context

    out: list[CommandDoc] = []

    def walk(cmd: Any, ctx: Any, path: tuple[str, ...]) -> None:
        params = tuple(_param(p, ctx) for p in cmd.get_params(ctx) if not getattr(p, "hidden", False))
        subs = tuple(cmd.list_commands(ctx)) if hasattr(cmd, "list_commands") else ()
        usage = " ".join([*path, *cmd.collect_usage_pieces(ctx)])
        out.append(CommandDoc(path, (cmd.help or "").strip(), usage, params, subs))
        for name in subs:
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                walk(sub, Context(sub, info_name=name, parent=ctx), (*path, name))

    top = root()
    walk(top, Context(top, info_name=PROG), (PROG,))
    return out


def _inline(text: str) -> str:
    """Plain help text as HTML: escaped, `code` spans kept."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def _paragraphs(text: str) -> str:
    parts = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    return "\n".join(f"<p>{_inline(p)}</p>" for p in parts)


def _panel(p: Param) -> str:
    """The --help panel a parameter is printed in: Arguments, its rich_help_panel, else Options."""
    return "Arguments" if p.kind == "argument" else (p.panel or "Options")


def _panel_rank(name: str, seen: list[str]) -> tuple[int, int]:
    """--help's order (console.rich_help): Arguments, the panels in console.PANELS order (any other in the
    order met), Options (--help) last."""
    from wikihowagent.console import PANELS

    order = ("Arguments", *PANELS)
    if name == "Options":
        return (2, 0)
    return (0, order.index(name)) if name in order else (1, seen.index(name))


def markdown() -> str:
    """The reference as Markdown headings (for the page's table of contents and anchors) with HTML bodies."""
    lines: list[str] = []
    for cmd in commands():
        level = "#" * min(2 + len(cmd.path) - 1, 4) if len(cmd.path) > 1 else "##"
        lines += [
            f"{level} `{cmd.name}` {{#{cmd.anchor}}}",
            "",
            _paragraphs(cmd.help),
            "",
            f'<pre class="cli-usage"><code>{html.escape(cmd.usage)}</code></pre>',
            "",
        ]
        if cmd.subcommands:
            links = ", ".join(f'<a href="#{cmd.anchor}-{s}"><code>{html.escape(s)}</code></a>' for s in cmd.subcommands)
            lines += [f"<p><strong>Commands:</strong> {links}</p>", ""]
        if cmd.params:
            rows = []
            heads = [_panel(p) for p in cmd.params]
            panels = list(dict.fromkeys(heads))
            by_panel = (
                sorted(cmd.params, key=lambda p: _panel_rank(_panel(p), panels)) if len(panels) > 1 else cmd.params
            )
            shown = None
            for p in by_panel:
                if len(panels) > 1 and _panel(p) != shown:  # the options' help panels, as --help groups them
                    shown = _panel(p)
                    rows.append(f'<tr><th colspan="4">{html.escape(shown)}</th></tr>')
                names = " / ".join(f"<code>{html.escape(n)}</code>" for n in p.names)
                flags = [x for x, on in (("required", p.required), ("repeatable", p.multiple)) if on]
                rows.append(
                    f"<tr><td>{names}</td><td>{html.escape(p.type)}</td><td>{_inline(p.help)}"
                    f"{' <em>(' + ', '.join(flags) + ')</em>' if flags else ''}</td>"
                    f"<td>{'<code>' + html.escape(p.default) + '</code>' if p.default else ''}</td></tr>"
                )
            lines += [
                '<table class="cli-params"><thead><tr><th>argument / option</th><th>type</th>'
                "<th>description</th><th>default</th></tr></thead><tbody>",
                *rows,
                "</tbody></table>",
                "",
            ]
    return "\n".join(lines)
