"""What the capture journal adds to a queued capture's acknowledgement: the screen plus one journal file
written (temp name, rename) per turn, and its removal once stored (plur/service/capture_journal.py).

    python -m bench.doors.journal [--turns 2000]

Prints p50/p99 of the acknowledgement's added cost with the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

TEXT = "The web package's dev server listens on port 5173, and we deploy from the branch release-candidate."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000)
    args = ap.parse_args(argv)
    from plur.screen.text import screen
    from plur.service.capture_journal import CaptureJournal

    journal = CaptureJournal(tempfile.mkdtemp(prefix="plur-bench-journal-"))
    added, removed = [], []
    for i in range(args.turns):
        t0 = time.perf_counter()
        shown = screen(TEXT)
        path = journal.append({"text": shown.text, "redacted": list(shown.kinds), "session": "s", "turn": i,
                               "role": "user", "scope": "global", "when": "2026-12-07T00:00:00+00:00"})
        t1 = time.perf_counter()
        journal.done(path)
        removed.append(time.perf_counter() - t1)
        added.append(t1 - t0)
    for name, xs in (("acknowledgement (screen + journal write)", added), ("removal once stored", removed)):
        xs.sort()
        print(f"{name:42s} p50 {xs[len(xs) // 2] * 1e3:.3f} ms  p99 {xs[int(len(xs) * 0.99)] * 1e3:.3f} ms")
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
