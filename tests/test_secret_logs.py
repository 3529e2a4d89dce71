"""No key a user typed reaches a log plur keeps: the service's log (its stdout and stderr), plur mcp's log lines,
the CLI's error and warning lines (a hook's stderr), whatever message quotes the user's text."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import urllib.request
from pathlib import Path

from conftest import wait_for

TOKEN = "ghp_" + "Zq8rT2mXv5Lw9Yb3Nc7Hd1Kf6Gs4Pj0aE2uQ"   # made at run time, never a real key
assert len(TOKEN) == 40

# the real service (plur serve, as plur service start runs it: stdout and stderr appended to service.log),
# whose recall fails on a query holding 'explode' with a message that quotes the query
SERVICE = textwrap.dedent("""
    import sys
    from plur.memory import Memory

    real = Memory.recall

    def recall(self, query, k=10, **kwargs):
        if "explode" in query:
            raise RuntimeError(f"index exploded while answering {query!r}")
        return real(self, query, k, **kwargs)

    Memory.recall = recall
    from plur.cli import main
    sys.exit(main(["--home", sys.argv[1], "serve", "--port", "0"]))
""")


def _post(info: dict, path: str, body: dict) -> int:
    req = urllib.request.Request(info["url"] + "/api/v1" + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {info['token']}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _grep(home: Path, needle: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_key_in_failing_requests_never_reaches_the_service_log() -> None:
    home = Path(tempfile.mkdtemp(prefix="plur-sl-", dir="/tmp")) / "home"   # a short unix socket path
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_MODEL="none", PLUR_FSYNC="0")
    with open(home / "service.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-c", SERVICE, str(home)], stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
    try:
        info = wait_for(lambda: (home / "service.json").exists() and json.loads((home / "service.json").read_text()),
                        "the service to write service.json", 120)
        wait_for(lambda: _post(info, "/recall", {"query": "warm"}) == 200, "the service to answer", 120)
        # a 500 (logged with its traceback), the recall worker's warning (agent id and error), a turn captured
        assert _post(info, "/block", {"agent_id": "a", "query": f"explode my key {TOKEN}"}) == 500
        assert _post(info, "/agents/helper/submit", {"text": f"explode again {TOKEN}"}) == 202
        assert _post(info, "/capture", {"text": f"The deploy key is {TOKEN} for the bucket.", "session": "chat-1",
                                        "turn": 0, "scope": "global", "wait": True}) == 200
        wait_for(lambda: "API block failed" in (log_text := (home / "service.log").read_text())
                 and "index exploded" in log_text, "both failures in service.log", 120)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    text = (home / "service.log").read_text()
    assert "[redacted github-token]" in text
    assert _grep(home, TOKEN) == [] and _grep(home, TOKEN[4:]) == []


def test_mcp_and_cli_log_lines_are_screened(capsys) -> None:
    from plur.cli import log_to_stderr
    from plur.mcp.logs import OneLine

    record = logging.LogRecord("plur", logging.WARNING, __file__, 1, "tool failed for %r", (TOKEN,), None)
    line = OneLine().format(record)
    assert TOKEN not in line and "[redacted github-token]" in line
    log_to_stderr()
    logging.getLogger("plur").warning("could not recall %s", TOKEN)
    err = capsys.readouterr().err
    assert TOKEN not in err and "[redacted github-token]" in err


def test_a_cli_error_quoting_a_key_is_screened(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUR_")}
    env.update(PLUR_HOME=str(tmp_path / "h"), PLUR_MODEL="none", PLUR_AUTOSTART_SERVICE="0")
    out = subprocess.run([sys.executable, "-m", "plur", "learn", "note", "--scope", f"project:{TOKEN}!"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "plur: error:" in out.stderr
    assert TOKEN not in out.stderr, out.stderr


def test_an_in_process_hosts_log_gets_no_key(plur_home: Path, caplog) -> None:
    """A Python host's own logging (a file it keeps): the worker's warning about a failed recall quotes no key."""
    from plur.memory import Memory
    from plur.prompt.worker import RecallWorker

    class Failing(Memory):
        def recall(self, query: str, k: int = 10, **kwargs):  # type: ignore[override]
            if "explode" in query:
                raise RuntimeError(f"index exploded while answering {query!r}")
            return super().recall(query, k, **kwargs)

    with Failing(plur_home, model="none", fsync=False, capture="off") as m, RecallWorker(m) as worker:
        with caplog.at_level(logging.WARNING, logger="plur"):
            worker.submit("a", f"explode {TOKEN}", awaited=True)
            assert worker.wait_idle(60)
    assert "index exploded" in caplog.text and TOKEN not in caplog.text, caplog.text
