"""The HTML shell shared by the report's pages (stylesheet and scripts from assets/, nothing remote)."""

from __future__ import annotations

import html


def page(title: str, body: str, scripts: list[str]) -> str:
    e = html.escape
    tags = "".join(f"<script src='{e(s)}'></script>" for s in scripts)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{e(title)}</title><link rel='stylesheet' href='assets/report.css'></head>\n<body>\n{body}\n"
        f"{tags}</body></html>\n"
    )
