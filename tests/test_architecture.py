"""Imports flow one way between layers; no import circles; `import plur` stays light; settings documented."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from plur.config import SETTINGS

PKG = Path(__file__).resolve().parents[1] / "plur"
BENCH = Path(__file__).resolve().parents[1] / "bench"

#: Layer of each top-level unit of ``plur`` (a subpackage or a module). A unit may import only units
#: of a lower layer, or itself. ``store`` < ``index``/``embed`` < ``memory`` < ``prompt`` < ``hosts`` <
#: ``service``/``web`` < ``mcp``/``hooks`` < ``cli`` < ``__main__`` (the console script). ``errors``/``config`` are the floor every layer may use.
LAYERS: dict[str, float] = {
    "errors": 0, "values": 0.5, "screen": 0.5, "config": 1, "net": 1, "jsonio": 1,
    "store": 2, "formats": 2.2,  # formats: the world's files read into engrams; storage never imports them
    "project": 2.5,   # project: a folder's project identity (registry writes go through the store's lock)
    "index": 3, "embed": 3, "stats": 3,
    "memory": 4,
    "prompt": 5,
    "hosts": 6,
    "service": 7, "web": 7,
    "mcp": 8, "hooks": 8,          # thin clients of the service (issue 26)
    "cli": 9, "__main__": 11, "__init__": 11,
}
#: Pairs on the same layer that must still not know each other.
SIBLINGS_APART = {("index", "embed"), ("embed", "index"), ("index", "stats"), ("embed", "stats"),
                  ("stats", "index"), ("stats", "embed"), ("web", "mcp"), ("mcp", "web")}


def _module_name(path: Path, root: Path, top: str) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [top, *rel.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, root: Path, top: str) -> set[str]:
    """Absolute dotted names of the ``top`` modules that ``path`` imports (relative imports resolved)."""
    here = _module_name(path, root, top)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == top or mod.startswith(top + "."):
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)   # `from . import x` may name a module
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name == top or a.name.startswith(top + "."))
    return {m for m in out if _exists(m, root, top)}


def _exists(dotted: str, root: Path, top: str) -> bool:
    parts = dotted.split(".")[1:]
    p = root.joinpath(*parts) if parts else root
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def unit_of(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(root: Path = PKG) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.py")):
        here = _module_name(path, root, "plur")
        src = unit_of(here)
        for target in imports_of(path, root, "plur"):
            dst = unit_of(target)
            if dst == src or dst == "__init__" and target == "plur" and src in ("cli", "__main__"):
                continue
            if dst not in LAYERS or src not in LAYERS:
                bad.append(f"{here} -> {target}: unit {dst if dst not in LAYERS else src!r} has no layer")
            elif LAYERS[dst] >= LAYERS[src] or (src, dst) in SIBLINGS_APART:
                bad.append(f"{here} (layer {src}) imports {target} (layer {dst})")
    return bad


def test_every_unit_has_a_layer() -> None:
    units = {p.stem for p in PKG.glob("*.py")} | {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert units <= set(LAYERS), f"give these a layer in LAYERS: {sorted(units - set(LAYERS))}"


def test_layers_import_downward_only() -> None:
    bad = layer_violations()
    assert not bad, "\n".join(bad)


def test_store_never_imports_index_or_embed() -> None:
    for path in (PKG / "store").rglob("*.py"):
        got = {unit_of(t) for t in imports_of(path, PKG, "plur")}
        assert not got & {"index", "embed", "stats", "memory", "prompt", "formats"}, (path.name, got)


def test_the_package_top_holds_only_the_foundation() -> None:
    """plur/ keeps at most six loose modules (the foundation every layer uses); the rest live in their layer."""
    loose = sorted(p.name for p in PKG.glob("*.py"))
    assert len(loose) <= 6, f"move these into the layer that uses them: {loose}"


@pytest.mark.parametrize("root", [BENCH])
def test_no_folder_over_fifteen_modules(root: Path) -> None:
    """`ls` of a folder reads as its jobs: a folder over fifteen modules (``__init__`` aside) is split by job."""
    big = {str(d.relative_to(root.parent)): n for d in [root, *root.rglob("*")] if d.is_dir()
           and (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > 15}
    assert not big, f"split these folders by job: {big}"


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The layer check is not vacuous: a store module importing the index layer is reported."""
    root = tmp_path / "plur"
    for sub in ("store", "index"):
        (root / sub).mkdir(parents=True)
        (root / sub / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "index" / "lexical.py").write_text("X = 1\n")
    (root / "store" / "store.py").write_text("from ..index.lexical import X\n")
    assert layer_violations(root) == ["plur.store.store (layer store) imports plur.index.lexical (layer index)"]


def _cycles(root: Path, top: str) -> list[list[str]]:
    graph = {_module_name(p, root, top): {t for t in imports_of(p, root, top) if t != _module_name(p, root, top)}
             for p in root.rglob("*.py")}
    # a package's __init__ is imported by every submodule import; ignore edges into ancestors
    for mod, deps in graph.items():
        graph[mod] = {d for d in deps if not mod.startswith(d + ".")}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


@pytest.mark.parametrize(("root", "top"), [(PKG, "plur"), (BENCH, "bench")])
def test_no_import_circles(root: Path, top: str) -> None:
    """No two modules import each other, even lazily inside a function (type-only imports included)."""
    assert _cycles(root, top) == []


#: Modules allowed over :data:`MAX_LINES` with the reason; empty: split a module that outgrows it by job.
JUSTIFIED_LONG: dict[str, str] = {}
MAX_LINES = 450


def long_modules(root: Path = PKG) -> dict[str, int]:
    """Modules of ``root`` over :data:`MAX_LINES` lines that :data:`JUSTIFIED_LONG` does not name."""
    return {str(p.relative_to(root)): n for p in root.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
            and str(p.relative_to(root)) not in JUSTIFIED_LONG}


def test_no_module_holds_two_jobs_by_size() -> None:
    """450 lines at most per module (the layout rule), no exceptions: split a longer one by job."""
    assert JUSTIFIED_LONG == {}
    long = long_modules()
    assert not long, f"split these modules (one job each): {long}"


def test_the_size_check_catches_a_new_long_module(tmp_path: Path) -> None:
    """The size check is not vacuous: a 451-line module anywhere in the package is reported."""
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "small.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == {"index/big.py": MAX_LINES + 1}


def test_import_plur_is_light() -> None:
    code = ("import sys, plur, plur.memory, plur.store.store, plur.index.recall, plur.embed.models_lock, "
            "plur.embed.embedder, plur.embed.cache, plur.prompt.section, plur.prompt.worker; "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'usearch', 'scipy', 'starlette', 'matplotlib') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_plur_learn_imports_no_heavy_library(tmp_path: Path) -> None:
    """`plur learn` (the CLI path, in a fresh process) never imports torch, usearch or sentence-transformers."""
    code = ("import sys, runpy; sys.argv = ['plur', '--home', sys.argv[1], 'learn', 'The sky is blue.']\n"
            "from plur.cli import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "heavy = [m for m in ('torch', 'sentence_transformers', 'usearch') if m in sys.modules]\n"
            "print('HEAVY=' + ','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "home")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "HEAVY=\n" in out.stdout or out.stdout.rstrip().endswith("HEAVY="), out.stdout


def test_every_setting_and_option_is_documented_in_the_generated_references() -> None:
    """The docs' settings and CLI references are generated at build time (scripts/docs_hooks.py); each row
    needs help text, and the settings page carries the marker the table replaces."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("plur_docs_hooks", root / "scripts" / "docs_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    table = hooks.settings_table()
    assert all(f"| `{s.name}` | `PLUR_{s.name.upper()}` |" in table for s in SETTINGS)
    assert "<home>" not in table and "&lt;home&gt;" in table  # shown, not taken for an HTML tag
    assert hooks.SETTINGS_MARK in (root / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    assert hooks.undocumented() == []
    assert len(hooks.walk_commands()) > 25  # the lazy group's commands were all loaded


def test_install_hints_name_this_checkout_never_the_pypi_project() -> None:
    """The PyPI project called plur is another one: every fix for a missing extra installs from the checkout."""
    import sys

    from plur.errors import MissingDependencyError, install_hint, require

    root = Path(__file__).resolve().parents[1]
    assert install_hint("mcp") == f"{sys.executable} -m pip install -e '{root}[mcp]'"
    with pytest.raises(MissingDependencyError, match=re.escape(f"install it with: {install_hint('adk')}")):
        require("plur_no_such_module_for_the_test", "adk")
    offenders = [str(p.relative_to(root)) for p in [root / "README.md", *sorted((root / "docs").rglob("*.md")),
                                                     *sorted((root / "plur").rglob("*.py"))]
                 if "pip install 'plur[" in p.read_text(encoding="utf-8")]
    assert offenders == [], offenders
