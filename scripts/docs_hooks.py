"""MkDocs hook (mkdocs.yml `hooks:`): generates the CLI reference from the Typer app at build time.

docs/reference/cli.md holds the marker below; it is replaced by `wikihowagent.clidoc.markdown()`, built from
the command objects, so the site and `--help` cannot disagree. A page without the marker fails the build.
"""

from __future__ import annotations

from mkdocs.exceptions import PluginError

MARKER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"


def on_page_markdown(markdown: str, page, **_) -> str:  # noqa: ANN001 (MkDocs' hook signature)
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"{PAGE}: the marker {MARKER} is missing: the CLI reference would not be generated")
    from wikihowagent.clidoc import markdown as cli_markdown

    return markdown.replace(MARKER, cli_markdown())
