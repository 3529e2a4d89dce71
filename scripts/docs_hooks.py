"""MkDocs hooks of plur's documentation site (``mkdocs.yml`` -> ``hooks:``): the generated parts.

- The settings reference: ``<!-- plur:settings -->`` in a page becomes the table of
  :data:`plur.config.SETTINGS` (name, ``PLUR_<NAME>``, default, range, meaning), the one table that drives
  the parser, ``plur doctor`` and these docs (datasette's way).
- The CLI reference is rendered by mkdocs-click from the click commands themselves; this hook checks
  first that every command and every option has help text.
- The benchmark figures: ``docs/data/bench-*.json`` (what ``python -m bench`` writes there) drawn with
  matplotlib into ``img/<name>.svg`` of the built site.

A setting, command or option without help text, or a figure that cannot be drawn, raises
:class:`mkdocs.exceptions.PluginError`: the build fails (``mkdocs build --strict`` in ``scripts/test``).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import click
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

SETTINGS_MARK = "<!-- plur:settings -->"
ROOT = Path(__file__).resolve().parents[1]


def settings_table() -> str:
    """The settings reference table (:func:`plur.config.settings_markdown`); raises when a setting has no help."""
    from plur.config import SETTINGS, settings_markdown

    bare = [s.name for s in SETTINGS if not (s.help or "").strip()]
    if bare:
        raise PluginError(f"settings without help text (plur/config.py SETTINGS): {', '.join(bare)}")
    return settings_markdown()


def walk_commands() -> list[tuple[str, click.Command]]:
    """Every ``plur`` command as ``(path, command)``, groups included, loading the lazy group's commands."""
    from plur.cli.root import cli

    out: list[tuple[str, click.Command]] = []

    def visit(path: str, cmd: click.Command) -> None:
        out.append((path, cmd))
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=path.split()[-1])
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    visit(f"{path} {name}", sub)

    visit("plur", cli)
    return out


def undocumented() -> list[str]:
    """Commands without a help text and options without ``help=`` (the help option itself aside)."""
    missing = []
    for path, cmd in walk_commands():
        if not (cmd.help or cmd.short_help or "").strip():
            missing.append(f"command `{path}`")
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip():
                missing.append(f"option {'/'.join(p.opts)} of `{path}`")
    return missing


def on_config(config: Any) -> Any:
    missing = undocumented()
    if missing:
        raise PluginError("the CLI reference needs help text for: " + "; ".join(missing))
    settings_table()
    return config


#: A fence whose info string is ``<lang> runnable`` is run by tests/test_doc_blocks.py; the word is dropped here
#: (GitHub shows only the first word; Python-Markdown's superfences would not parse the fence with it).
RUNNABLE = re.compile(r"^(\s*```+[\w+-]+) runnable[ \t]*$", re.M)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = RUNNABLE.sub(r"\1", markdown)
    if SETTINGS_MARK in markdown:
        markdown = markdown.replace(SETTINGS_MARK, settings_table())
    return markdown


#: Placeholders in command help (``<home>/service.log``, ``already known: <id>``) that mkdocs-click passes
#: to the page as Markdown, where they would be taken for HTML tags and vanish.
PLACEHOLDER = re.compile(r"<(home|id|terms|name|scope|port|session|agent|project|path|key|model|folder)>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return PLACEHOLDER.sub(r"&lt;\1&gt;", html)


def bench_figure(data: dict[str, Any]) -> bytes:
    """A bar chart (SVG) of one benchmark summary: ``{"title", "metrics": [...], "rows": [{"label", "values"}]}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics, rows = data["metrics"], data["rows"]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / max(1, len(rows))
    for i, row in enumerate(rows):
        xs = [m + i * width for m in range(len(metrics))]
        bars = ax.bar(xs, row["values"], width=width, label=row["label"])
        ax.bar_label(bars, fmt="%.3f", fontsize=7, padding=2)
    ax.set_xticks([m + width * (len(rows) - 1) / 2 for m in range(len(metrics))], metrics)
    ax.set_ylim(0, 1.05)
    ax.set_title(data["title"], fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue().encode("utf-8")


def matrix_figures(benchmarks_md: str) -> dict[str, dict[str, Any]]:
    """Figure data from the results table ``python -m bench all`` writes between the bench:results markers.

    One figure per (dataset, granularity) at its own level, default-path variants (no ``@full``), metrics
    recall_any@5, ndcg_any@5 and recall_any@10.
    """
    from bench.quality.report import MATRIX_HEADER, README_END, README_START

    start, end = benchmarks_md.find(README_START), benchmarks_md.find(README_END)
    if start < 0 or end < start:
        raise PluginError("docs/benchmarks.md lost its bench:results markers (python -m bench all writes there)")
    want = ["recall_any@5", "ndcg_any@5", "recall_any@10"]
    cols = [MATRIX_HEADER.index(m) for m in want]
    figures: dict[str, dict[str, Any]] = {}
    for line in benchmarks_md[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(MATRIX_HEADER) or cells[0] == "dataset" or set(cells[0]) <= {"-"}:
            continue
        dataset, gran, level, variant = cells[:4]
        if level != gran or variant.endswith("@full"):
            continue
        fig = figures.setdefault(f"bench-{dataset}-{gran}", {
            "title": f"{dataset}, {gran} granularity, n={cells[4]} (python -m bench all)", "metrics": want,
            "rows": []})
        fig["rows"].append({"label": variant, "values": [float(cells[i]) for i in cols]})
    if not figures:
        raise PluginError("docs/benchmarks.md: no rows in the bench:results table to draw")
    return figures


def on_files(files: Files, config: Any) -> Files:
    docs = Path(config["docs_dir"])
    figures = matrix_figures((docs / "benchmarks.md").read_text(encoding="utf-8"))
    for path in sorted((docs / "data").glob("bench-*.json")):
        figures[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    for name, data in figures.items():
        try:
            svg = bench_figure(data)
        except (KeyError, ValueError, TypeError) as exc:
            raise PluginError(f"{name}: cannot draw the benchmark figure ({exc})") from exc
        files.append(File.generated(config, f"img/{name}.svg", content=svg))
    return files
