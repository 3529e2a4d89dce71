"""Per-call cost of the secret screen (:func:`plur.screen.text.screen`) on real conversation turns.

Texts: LoCoMo turns (chat, conversations 1-10 of ``locomo/locomo10.json``) and LongMemEval user turns (longer, many
about code and data: the samples in ``longmemeval/``), in ``$PLUR_SHARED_DATA`` or ``../shared/data``, the first
``--n`` of each. Every text is screened ``--repeats`` times in a row; the figure per text is the best of those,
and the table gives the p50, p90 and mean over texts, in microseconds. ``--against PATH`` times another checkout
(its ``plur``) in the same run, alternating, so both see the same machine load::

    python -m bench.speed.screen [--n 2000] [--repeats 5] [--against ../main]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:                 # run as a script (the child): bench is importable all the same
    sys.path.append(str(REPO))


def texts(n: int) -> dict[str, list[str]]:
    """The first ``n`` LoCoMo turns and the first ``n`` LongMemEval user turns."""
    from bench.datasets.paths import SHARED_DATA as DATA

    locomo = json.loads((DATA / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    chat = [t["text"] for sample in locomo for key, turns in sample["conversation"].items()
            if key.startswith("session_") and isinstance(turns, list) for t in turns if t.get("text")]
    from bench.datasets.longmemeval import load_entries

    user: list[str] = []
    for path in sorted((DATA / "longmemeval").glob("*.json")):
        for entry in load_entries(path)[0]:
            for session in entry.get("haystack_sessions", []):
                user += [m["content"] for m in session if m.get("role") == "user" and isinstance(m.get("content"), str)]
    return {"locomo turns": chat[:n], "longmemeval user turns": user[:n]}


def _time(repo: str, sets: dict[str, list[str]], repeats: int) -> dict[str, list[float]]:
    """Run in a child process (no plur imported yet): best-of-``repeats`` microseconds per text, ``repo``'s plur."""
    import time

    sys.path.insert(0, repo)
    from plur.screen.text import screen

    out = {}
    for name, batch in sets.items():
        per = []
        for t in batch:
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                screen(t)
                best = min(best, time.perf_counter() - t0)
            per.append(best * 1e6)
        out[name] = per
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=2000, help="texts of each set")
    p.add_argument("--repeats", type=int, default=5, help="screens of each text (the best counts)")
    p.add_argument("--against", default="", help="another checkout to time in the same run")
    p.add_argument("--child", nargs=2, metavar=("REPO", "TEXTS"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        repo, path = a.child
        print(json.dumps(_time(repo, json.loads(Path(path).read_text(encoding="utf-8")), a.repeats)))
        return 0
    import tempfile

    sets = texts(a.n)
    repos = {"this checkout": str(REPO)} | ({"--against": str(Path(a.against).resolve())} if a.against else {})
    runs: dict[str, dict[str, list[float]]] = {label: {} for label in repos}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "texts.json"
        path.write_text(json.dumps(sets), encoding="utf-8")
        for _ in range(2):                    # alternate, so load changes hit both
            for label, repo in repos.items():
                got = json.loads(subprocess.run([sys.executable, __file__, "--child", repo, str(path), "--repeats",
                                                 str(a.repeats)], check=True, capture_output=True, text=True).stdout)
                for name, per in got.items():
                    prev = runs[label].get(name)
                    runs[label][name] = per if prev is None else [min(x, y) for x, y in zip(prev, per)]
    print("| checkout | texts | n | mean chars | p50 us | p90 us | mean us |\n|---|---|---|---|---|---|---|")
    for label, by_set in runs.items():
        for name, per in by_set.items():
            chars = statistics.fmean(len(t) for t in sets[name])
            q = statistics.quantiles(per, n=10)
            print(f"| {label} | {name} | {len(per)} | {chars:.0f} | {statistics.median(per):.1f} | {q[8]:.1f} "
                  f"| {statistics.fmean(per):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
