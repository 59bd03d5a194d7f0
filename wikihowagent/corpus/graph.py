"""The topic knowledge graph (the paper's Appendix E, Fig. 9): root -> domains -> topics -> the rest of
the category breadcrumb -> articles (optional), as a networkx DiGraph written as GraphML, node-link JSON,
a PNG overview, and a self-contained interactive HTML tree (no CDN, no script from anywhere)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import networkx as nx

from wikihowagent.corpus.core import CorpusArticle
from wikihowagent.domains import ROOT_CATEGORIES, norm
from wikihowagent.outdir import write_files_atomically

ROOT = "root"
# What XML 1.0 (GraphML) cannot hold: control characters but tab/LF/CR, surrogates, U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def clean_label(text: str) -> str:
    """A title as a node label: characters XML cannot hold become U+FFFD (shown as �), so one odd article
    title does not stop the graph."""
    return _NOT_XML.sub("\ufffd", text)


class GraphBuilder:
    """Nodes `kind:name` with attributes label, kind (root|domain|topic|category|article), articles and
    tutorials (counts below the node); edges parent -> child. Feed articles with `add`."""

    def __init__(self, with_articles: bool = False) -> None:
        self.with_articles = with_articles
        self.graph = nx.DiGraph()
        self.graph.add_node(ROOT, label="WikiHow", kind="root", articles=0, tutorials=0)

    def _node(self, kind: str, label: str) -> str:
        label = clean_label(label)
        nid = f"{kind}:{norm(label)}"
        if nid not in self.graph:
            self.graph.add_node(nid, label=label, kind=kind, articles=0, tutorials=0)
        return nid

    def add(self, art: CorpusArticle, tutorials: int | None = None) -> None:
        g = self.graph
        chain = [ROOT, self._node("domain", art.domain or "(none)"), self._node("topic", art.topic or "(none)")]
        crumbs = [c for c in art.raw.get("categories", []) if c.strip() and c.strip().lower() not in ROOT_CATEGORIES]
        keys = [norm(c) for c in crumbs]
        # The breadcrumb below the topic; a topic not in it (a folder) takes what is below the domain-level crumb.
        below = keys.index(norm(art.topic)) + 1 if norm(art.topic) in keys else 1
        for c in crumbs[below:]:
            chain.append(self._node("category", c))
        if self.with_articles:
            chain.append(self._node("article", art.raw["title"]))
        for parent, child in zip(chain, chain[1:], strict=False):
            if parent != child:
                g.add_edge(parent, child)
        for n in dict.fromkeys(chain):
            g.nodes[n]["articles"] += 1
            g.nodes[n]["tutorials"] += len(art.methods) if tutorials is None else tutorials


def write_graph(g: nx.DiGraph, out: Path, stem: str = "graph") -> list[Path]:
    """GraphML, JSON (networkx node-link), PNG overview and offline HTML; returns the paths written."""
    files: dict[Path, str | Callable[[Path], None]] = {  # all or nothing (outdir.write_files_atomically)
        out / f"{stem}.graphml": lambda p: nx.write_graphml(g, p),
        out / f"{stem}.json": json.dumps(nx.node_link_data(g, edges="edges"), ensure_ascii=False, indent=1),
        out / f"{stem}.png": lambda p: _png(g, p),
        out / f"{stem}.html": _html(g),
    }
    return write_files_atomically(files)


def _png(g: nx.DiGraph, path: Path, max_nodes: int = 400) -> None:
    """Root, domains and topics (and deeper levels while the picture stays under `max_nodes`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keep = [n for n, k in g.nodes(data="kind") if k in ("root", "domain", "topic")]
    for kind in ("category", "article"):
        more = [n for n, k in g.nodes(data="kind") if k == kind]
        if len(keep) + len(more) > max_nodes:
            break
        keep += more
    sub = g.subgraph(keep)
    pos = nx.bfs_layout(sub.to_undirected(as_view=True), ROOT, align="vertical")
    colors = {"root": "#333333", "domain": "#c44e52", "topic": "#4c72b0", "category": "#55a868", "article": "#bbbbbb"}
    fig, ax = plt.subplots(figsize=(12, 14))
    nx.draw_networkx_edges(sub, pos, ax=ax, alpha=0.3, arrows=False, width=0.5)
    nx.draw_networkx_nodes(
        sub,
        pos,
        ax=ax,
        node_size=[20 + 4 * sub.nodes[n]["articles"] ** 0.5 * 10 for n in sub],
        node_color=[colors[sub.nodes[n]["kind"]] for n in sub],
    )
    labelled = (
        ("root", "domain", "topic")
        if sum(k == "topic" for _, k in sub.nodes(data="kind")) <= 100
        else ("root", "domain")
    )
    labels = {n: sub.nodes[n]["label"] for n in sub if sub.nodes[n]["kind"] in labelled}
    nx.draw_networkx_labels(sub, pos, labels, ax=ax, font_size=7)
    shown = ", ".join(sorted({sub.nodes[n]["kind"] for n in sub} - {"root"}))
    ax.set_title(f"Topic knowledge graph: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges (shown: {shown})")
    ax.axis("off")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 1.5em; }}
details {{ margin-left: 1.2em; }} summary {{ cursor: pointer; }}
.domain > summary {{ font-weight: bold; color: #c44e52; }} .topic > summary {{ color: #4c72b0; }}
.n {{ color: #777; font-size: 12px; }} .hidden {{ display: none; }} li.article {{ margin-left: 2.4em; }}
</style></head><body>
<h1>{title}</h1>
<p>{nodes} nodes, {edges} edges. Click to expand; type to filter.
<input id="q" type="search" placeholder="filter (e.g. dating)"> <button id="open">expand all</button>
<button id="close">collapse all</button></p>
<div id="tree">{tree}</div>
<script>
const all = () => document.querySelectorAll('#tree details');
document.getElementById('open').onclick = () => all().forEach(d => d.open = true);
document.getElementById('close').onclick = () => all().forEach(d => d.open = false);
document.getElementById('q').oninput = (e) => {{
  const q = e.target.value.trim().toLowerCase();
  const nodes = Array.from(document.querySelectorAll('#tree details, #tree li.article')).reverse();
  nodes.forEach(n => {{
    const own = (n.dataset.label || '').includes(q);
    const kid = Array.from(n.querySelectorAll(':scope > details, :scope > ul > li.article')).some(c => !c.classList.contains('hidden'));
    n.classList.toggle('hidden', q !== '' && !own && !kid);
    if (n.tagName === 'DETAILS') n.open = q === '' ? n.classList.contains('root') : kid;
  }});
}};
</script></body></html>
"""


def _html(g: nx.DiGraph) -> str:
    def render(n: str, seen: set[str]) -> str:
        seen.add(n)
        d = g.nodes[n]
        label = html.escape(d["label"])
        counts = f'<span class="n">{d["articles"]} articles, {d["tutorials"]} tutorials</span>'
        kids = sorted(
            (c for c in g.successors(n) if c not in seen), key=lambda c: (-g.nodes[c]["articles"], g.nodes[c]["label"])
        )
        arts = [c for c in kids if g.nodes[c]["kind"] == "article"]
        inner = "".join(render(c, seen) for c in kids if g.nodes[c]["kind"] != "article")
        if arts:
            inner += (
                "<ul>"
                + "".join(
                    f'<li class="article" data-label="{html.escape(g.nodes[c]["label"].lower())}">'
                    f"{html.escape(g.nodes[c]['label'])}</li>"
                    for c in arts
                )
                + "</ul>"
            )
        data = html.escape(d["label"].lower())
        opened = " open" if d["kind"] == "root" else ""
        return (
            f'<details class="{d["kind"]}" data-label="{data}"{opened}><summary>{label} {counts}</summary>'
            f"{inner}</details>"
        )

    tree = render(ROOT, set())
    return _PAGE.format(
        title="WikiHow topic knowledge graph", nodes=g.number_of_nodes(), edges=g.number_of_edges(), tree=tree
    )
