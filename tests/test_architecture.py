"""Imports flow one way; `import plur` stays light; every setting is documented."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from plur.config import SETTINGS, settings_markdown

PKG = Path(__file__).resolve().parents[1] / "plur"
README = Path(__file__).resolve().parents[1] / "README.md"

#: module -> plur modules it must never import (lower layers know nothing of higher ones).
FORBIDDEN = {
    "errors": {"*"},
    "engram": {"store", "lexical", "dense", "models_lock", "embed", "embed_cache", "indexes", "recall", "memory",
               "section", "worker", "web", "cli"},
    "store": {"tokenize", "lexical", "dense", "models_lock", "embed", "embed_cache", "indexes", "recall", "memory",
              "section", "worker", "web", "cli", "stats"},
    # store helpers, below store.py: atomic <- quarantine, store_manifest; store_lock stands alone.
    "atomic": {"store", "quarantine", "store_manifest", "store_lock", "tokenize", "lexical", "dense", "models_lock",
               "embed", "embed_cache", "indexes", "recall", "memory", "section", "worker", "web", "cli", "stats"},
    "quarantine": {"store", "store_manifest", "store_lock", "tokenize", "lexical", "dense", "models_lock", "embed",
                   "embed_cache", "indexes", "recall", "memory", "section", "worker", "web", "cli", "stats"},
    "store_manifest": {"store", "quarantine", "store_lock", "tokenize", "lexical", "dense", "models_lock", "embed",
                       "embed_cache", "indexes", "recall", "memory", "section", "worker", "web", "cli", "stats"},
    "store_lock": {"store", "atomic", "quarantine", "store_manifest", "tokenize", "lexical", "dense", "models_lock",
                   "embed", "embed_cache", "indexes", "recall", "memory", "section", "worker", "web", "cli", "stats"},
    "tokenize": {"store", "lexical", "dense", "models_lock", "embed", "embed_cache", "indexes", "memory", "web", "cli"},
    "lexical": {"store", "dense", "models_lock", "embed", "embed_cache", "indexes", "memory", "web", "cli"},
    "dense": {"store", "lexical", "models_lock", "embed", "embed_cache", "indexes", "memory", "web", "cli"},
    # models_lock <- embed <- embed_cache: the lock knows no model; the Embedder knows no cache.
    "models_lock": {"config", "engram", "store", "tokenize", "lexical", "dense", "embed", "embed_cache", "fusion",
                    "indexes", "recall", "stats", "memory", "section", "worker", "web", "cli"},
    "embed": {"store", "lexical", "dense", "embed_cache", "indexes", "recall", "stats", "memory", "section", "worker",
              "web", "cli"},
    "embed_cache": {"store", "lexical", "dense", "indexes", "recall", "stats", "memory", "section", "worker", "web",
                    "cli"},
    "fusion": {"store", "lexical", "dense", "models_lock", "embed", "embed_cache", "indexes", "memory", "web", "cli"},
    "stats": {"store", "lexical", "dense", "models_lock", "embed", "embed_cache", "indexes", "memory", "web", "cli"},
    "recall": {"store", "memory", "web", "cli", "worker", "section"},
    "memory": {"web", "cli", "worker", "section"},
    "section": {"web", "cli", "store"},
    "worker": {"web", "cli", "store"},
}


def plur_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level and node.module:
                out.add(node.module.split(".")[0])
            elif node.level:
                out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("plur."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("plur."))
    return out


def test_imports_flow_downward() -> None:
    for module, forbidden in FORBIDDEN.items():
        path = PKG / f"{module}.py"
        assert path.exists(), path
        got = plur_imports(path)
        bad = got if "*" in forbidden else got & forbidden
        assert not bad, f"plur/{module}.py imports {sorted(bad)}"


def test_import_plur_is_light() -> None:
    code = ("import sys, plur, plur.memory, plur.store, plur.recall, plur.models_lock, plur.embed, plur.embed_cache; "
            "heavy = [m for m in ('torch', 'sentence_transformers', 'hnswlib', 'scipy', 'starlette', 'matplotlib') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_setting_is_documented_in_readme() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in text]
    assert not missing, f"settings missing from the README table: {missing}"
    assert settings_markdown() in text, "README settings table is stale: paste plur.config.settings_markdown()"
