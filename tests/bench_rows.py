"""Benchmark rows made comparable across runs of the same questions (test helper).

A row's block token counts and each candidate's line tokens count the engrams' ids, which are random
(hex digits tokenise unevenly), and ``latency_ms`` is a timing: drop those, keep everything else.
"""

from __future__ import annotations

from typing import Any


def comparable(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Any]]:
    """``(rows without timings and blocks, the blocks without token counts, the candidates without tokens)``."""
    out = [{k: v for k, v in r.items() if k not in ("latency_ms", "block", "block_nofloor", "candidates")}
           for r in rows]
    blocks = [{k: {f: n for f, n in r[k].items() if f != "tokens"} for k in ("block", "block_nofloor") if k in r}
              for r in rows]
    return out, blocks, [[c[:2] + c[3:] for c in r.get("candidates", [])] for r in rows]
