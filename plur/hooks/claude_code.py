"""``plur hook claude-code``: memory for Claude Code without a tool call, through its command hooks.

Claude Code runs the command for ``UserPromptSubmit`` and ``SessionStart`` with the event as JSON
on stdin (``session_id``, ``hook_event_name``, ``prompt`` or ``source``, ``cwd``...). This command
answers on stdout with ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``,
which Claude Code adds to the conversation (prints nothing when there is nothing new to say).

Unlike a section host, whose block is replaced every turn, Claude Code keeps each hook's context
in the conversation. So the command injects only engrams this session has not been shown, at
most ``--max-engrams`` per prompt within ``--budget-tokens`` (:mod:`plur.prompt.increment`), and
remembers per ``session_id`` what it showed in ``<home>/hooks/claude-code/<session>.json``.
It recalls in the project of the event's ``cwd`` (its git root, a bound folder, the home's registry:
:mod:`plur.project`, the same scope the DSH plugin and ``plur project which`` give that folder) plus
``global``; ``--scope`` overrides it.
``SessionStart`` with ``source`` ``clear`` or ``compact`` (the conversation was emptied or
summarised) forgets that list, so memory can be shown again. A session it has no list for that did not
start new (resumed and forked, in Claude Code or Codex) starts from what its history already shows
(:mod:`plur.hooks.transcript`).

The fast path, a running service, imports only ``json``, ``os`` and ``socket`` (a raw HTTP/1.1
request over the service's unix socket or loopback port), so the hook costs little more than the
interpreter's start. Without a service it starts one in the background (:mod:`plur.service.autostart`)
and answers this prompt by keyword (BM25) in-process, telling the user in ``systemMessage``.

Exit codes: 0 (answered, or nothing to add); 1 with one line on stderr (bad input, a failure):
Claude Code shows it and the prompt goes on. Never 2, which would block the user's prompt.
"""

from __future__ import annotations

import json
import os
import socket
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is ~2 ms of every hook call
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("UserPromptSubmit", "SessionStart", "Stop")
#: Seconds the hook waits for the service's answer (Claude Code's own limit for a command hook is 60 s).
TIMEOUT_S = 10.0
MAX_ENGRAMS = 4
BUDGET_TOKENS = 400
STATE_DIR = ("hooks", "claude-code")
#: Largest hook input read from stdin, bytes (a prompt can be long; the state stays small).
MAX_INPUT_BYTES = 8 * 1024 * 1024
USAGE = ("usage: plur hook claude-code [--home DIR] [--scope SCOPE|here] [--max-engrams N] [--budget-tokens N] "
         "[--timeout-s S]  (reads the hook's JSON on stdin; the scope defaults to the project of its cwd)")


class HookError(Exception):
    """One line for stderr (exit 1)."""


def _home(value: str | None) -> str:
    if value is not None and not value.strip():  # as the plur command: '' would be the current directory
        raise HookError(f"--home {value!r} is empty ('' would be the current directory); pass a folder, or leave "
                        "it out for $PLUR_HOME / ~/.plur")
    if value:
        return os.path.expanduser(value)
    env = os.environ.get("PLUR_HOME")
    return os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".plur")


def parse_args(argv: list[str]) -> dict[str, Any]:
    """``--home``, ``--scope``, ``--max-engrams``, ``--budget-tokens``, ``--timeout-s`` (``--name value``)."""
    opts: dict[str, Any] = {"home": None, "scope": None, "max_engrams": MAX_ENGRAMS, "budget_tokens": BUDGET_TOKENS,
                            "timeout_s": TIMEOUT_S}
    conv = {"max_engrams": int, "budget_tokens": int, "timeout_s": float}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, _, value = arg.partition("=")
        key = name[2:].replace("-", "_") if name.startswith("--") else ""
        if key not in opts:
            raise HookError(f"unknown argument {arg!r}; {USAGE}")
        if not _:
            if i + 1 >= len(argv):
                raise HookError(f"{name} needs a value; {USAGE}")
            i += 1
            value = argv[i]
        if key != "home" and not value.strip():  # as every plur command: empty input is refused (--home: _home)
            raise HookError(f"{name} is empty; {USAGE}")
        try:
            opts[key] = conv[key](value) if key in conv else value
        except ValueError:
            raise HookError(f"{name} {value!r} is not a number; {USAGE}") from None
        if key in conv and not 0 <= opts[key] <= 100000:
            raise HookError(f"{name} {value!r} is out of range (0..100000)")
        i += 1
    return opts


def read_event(raw: bytes) -> dict[str, Any]:
    """The hook's JSON object; raises HookError naming what is wrong."""
    try:
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HookError(f"the hook input on stdin is not JSON ({exc}); Claude Code sends one JSON object") from None
    if not isinstance(event, dict):
        raise HookError("the hook input on stdin must be a JSON object")
    name = event.get("hook_event_name")
    if name not in EVENTS:
        shown = "is missing" if name is None else f"{name!r} is not handled"
        raise HookError(f"hook_event_name {shown}; register plur for {' and '.join(EVENTS)}")
    if not isinstance(event.get("session_id"), str) or not event["session_id"]:
        raise HookError("the hook input has no session_id")
    return event


# -- the session's shown set ---------------------------------------------------------------------
def state_path(home: str, session_id: str) -> str:
    """``<home>/hooks/claude-code/<session>.json``; a session id outside ``[A-Za-z0-9._-]`` is hashed."""
    safe = session_id if (len(session_id) <= 128 and session_id.strip(".")
                          and all(c.isascii() and (c.isalnum() or c in "._-") for c in session_id)) else None
    if safe is None:
        import hashlib

        safe = "h-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
    return os.path.join(home, *STATE_DIR, safe + ".json")


def _state(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_shown(path: str) -> list[str]:
    shown = _state(path).get("shown")
    return [x for x in shown if isinstance(x, str)] if isinstance(shown, list) else []


def load_turn(path: str) -> int:
    """The next captured turn's number in this session (0 for a new one)."""
    turn = _state(path).get("turn")
    return turn if isinstance(turn, int) and not isinstance(turn, bool) and turn >= 0 else 0


def _private_dirs(folder: str) -> None:
    """``mkdir -p folder``, every folder made 0700 (``os.makedirs`` gives its mode to the last one only: ``hooks/``
    was 0755 under umask 022)."""
    if os.path.isdir(folder):
        return
    _private_dirs(os.path.dirname(folder))
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass


def save_shown(path: str, shown: list[str], turn: int | None = None) -> None:
    """Write atomically, owner-only (ids and a turn count: nothing secret; the folder is private like the home)."""
    _private_dirs(os.path.dirname(path))
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"shown": shown, "turn": load_turn(path) if turn is None else turn}, fh)
    os.replace(tmp, path)


# -- the service, over a raw HTTP/1.1 request ----------------------------------------------------
def _service_info(home: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(home, "service.json"), encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("token"), str):
        return None
    from ..service.stamp import drift

    return None if drift(home, info)[0] else info  # other settings: autostart.door decides (replace / in-process)


def _connect(info: dict[str, Any], timeout_s: float) -> socket.socket | None:
    path = info.get("socket")
    if isinstance(path, str) and path and hasattr(socket, "AF_UNIX"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout_s)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
    url = info.get("url")
    if isinstance(url, str) and url.startswith("http://"):
        hostport = url[len("http://"):].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        try:
            return socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s)
        except (OSError, ValueError):
            return None
    return None


def post(info: dict[str, Any], path: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
    """``POST /api/v1<path>``; the JSON answer, ``None`` when the service cannot be reached.

    Raises:
        HookError: the service answered an error (its message), or sent something that is not JSON.
    """
    s = _connect(info, timeout_s)
    if s is None:
        return None
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    head = (f"POST /api/v1{path} HTTP/1.1\r\nHost: plur\r\nAuthorization: Bearer {info['token']}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
    chunks = []
    try:
        with s:
            s.sendall(head.encode("ascii") + payload)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError as exc:
        raise HookError(f"the plur service did not answer within {timeout_s:g} s ({exc}); see "
                        "<home>/service.log") from None
    raw = b"".join(chunks)
    header, _, data = raw.partition(b"\r\n\r\n")
    try:
        status = int(header.split(b" ", 2)[1])
        answer = json.loads(data.decode("utf-8"))
    except (IndexError, ValueError, UnicodeDecodeError):
        raise HookError("the plur service sent an answer that is not JSON; see <home>/service.log") from None
    if status >= 400:
        err = answer.get("error", {}) if isinstance(answer, dict) else {}
        raise HookError(f"plur: {err.get('message') or f'HTTP {status}'}")
    return answer


def _in_process(home: str, body: dict[str, Any], keyword: bool, capture: dict[str, Any] | None) -> dict[str, Any]:
    """The same selection in this process (no service): BM25 only while a service starts; then the capture."""
    from ..memory import Memory

    memory = Memory(home)
    try:
        got = _inject(memory, body, keyword)
        if capture is not None:
            memory.capture(capture["text"], session=capture["session"], turn=capture["turn"],
                           scope=capture["scope"], agent=capture["agent_id"])
        return got
    finally:
        try:
            memory.store.close()
        finally:
            memory.close()


def _inject(memory: Any, body: dict[str, Any], keyword: bool) -> dict[str, Any]:
    from ..prompt.increment import inject_block

    mode = "bm25" if keyword else "hybrid"
    if not keyword:
        memory.catch_up(progress=False)
    block = inject_block(memory, body["query"], exclude=body["exclude"], scope=body["scope"],
                         agent=body["agent_id"], max_engrams=body["max_engrams"],
                         budget_tokens=body["budget_tokens"], mode=mode)
    return {"text": block.text, "engram_ids": list(block.engram_ids), "mode": mode, "overview": block.overview}


def project_scope(event: dict[str, Any], scope: str | None, home: str) -> str:
    """The scope this prompt recalls in: ``--scope`` when given (``here``: the event's folder), else the
    project of the event's ``cwd`` (the hook process's own folder when the input has none), as every door
    resolves it (:mod:`plur.project`). Never ``None`` (every scope) and never ``global`` by accident."""
    from ..project import HERE, resolve

    if scope is not None and scope != HERE:
        from ..store.engram import check_scope

        try:
            return check_scope(scope)
        except ValueError as exc:
            raise HookError(f"--scope: {exc}") from None
    from ..errors import PlurError

    cwd = event.get("cwd")
    folder = cwd if isinstance(cwd, str) and cwd and os.path.isabs(cwd) else os.getcwd()
    try:
        return resolve(folder, home).scope
    except PlurError as exc:  # an unreadable projects.json: say which, the prompt goes on
        raise HookError(str(exc)) from None


def answer(event: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any] | None:
    """What to print for ``event`` (``None``: nothing new), after recording what it shows."""
    home = _home(opts["home"])
    name = event["hook_event_name"]
    path = state_path(home, event["session_id"])
    if name == "Stop":
        _capture_answer(event, opts, home, path)
        return None
    if name == "SessionStart" and event.get("source") in ("clear", "compact", "startup"):
        shown: list[str] = []  # a new or emptied conversation holds none of what was shown before
    elif not os.path.exists(path):
        # a session seen for the first time that is not new: resumed and forked (Claude Code's --resume ID
        # --fork-session, Codex's fork: a new session_id over the old history); what it holds is not shown again
        from .transcript import shown_in_transcript

        shown = shown_in_transcript(event.get("transcript_path"))
    else:
        shown = load_shown(path)
    query = event.get("prompt") if name == "UserPromptSubmit" else ""
    if not isinstance(query, str):
        raise HookError("the UserPromptSubmit input has no prompt text")
    body = {"query": query, "scope": project_scope(event, opts["scope"], home), "agent_id": "claude-code",
            "exclude": shown,
            "max_engrams": opts["max_engrams"], "budget_tokens": opts["budget_tokens"], "include_pinned": True}
    note = None
    turn = load_turn(path)
    # the prompt is captured after its own recall (never into its own block), through the service's capture
    # thread (the setting capture, the secret screen, the trivial filter, the ingest path: plur.memory.capture)
    capture = ({"text": query, "session": event["session_id"], "turn": turn, "role": "user",
                "scope": body["scope"], "agent_id": "claude-code"} if name == "UserPromptSubmit" else None)
    info = _service_info(home)
    got = post(info, "/inject", body, opts["timeout_s"]) if info is not None else None
    if got is not None and capture is not None:
        post(info, "/capture", capture, opts["timeout_s"])
    if got is None:
        if not os.path.isdir(home):
            return None  # no memory yet (`plur init` creates the home)
        from ..service.autostart import KEYWORD_NOTE, door

        found = door(home)
        if found.client is not None:
            found.client.close()
            info = _service_info(home)
            got = post(info, "/inject", body, opts["timeout_s"]) if info is not None else None
            if got is not None and capture is not None:
                post(info, "/capture", capture, opts["timeout_s"])
        if got is None:
            got = _in_process(home, body, found.keyword_only, capture)
            note = f"plur: {KEYWORD_NOTE}" if found.keyword_only else None
    ids = [x for x in got.get("engram_ids", []) if isinstance(x, str)]
    if got.get("overview") is True:  # shown once per session unless asked for (plur.prompt.increment)
        from ..prompt.increment import OVERVIEW_MARK

        ids.append(OVERVIEW_MARK)
    if ids or name == "SessionStart" or capture is not None:
        save_shown(path, shown + [x for x in ids if x not in shown], turn + 1 if capture is not None else None)
    out: dict[str, Any] = {}
    if got.get("text"):
        out["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": got["text"]}
    if note:
        out["systemMessage"] = note
    return out or None


def _capture_answer(event: dict[str, Any], opts: dict[str, Any], home: str, path: str) -> None:
    """``Stop``: hand the assistant's answer to capture (kept only under ``capture = "all"``: :mod:`.stop`)."""
    from .stop import assistant_text

    text = assistant_text(event)
    if not text.strip() or not os.path.isdir(home):
        return
    turn = load_turn(path)
    body = {"text": text, "session": event["session_id"], "turn": turn, "role": "assistant",
            "scope": project_scope(event, opts["scope"], home), "agent_id": "claude-code"}
    info = _service_info(home)
    if info is None or post(info, "/capture", body, opts["timeout_s"]) is None:
        from ..memory import Memory

        with Memory(home) as memory:
            if memory.settings.capture == "all":
                memory.capture(text, session=body["session"], turn=turn, role="assistant", scope=body["scope"],
                               agent="claude-code")
    save_shown(path, load_shown(path), turn + 1)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``plur hook claude-code``; returns the exit code."""
    args = sys.argv[2:] if argv is None else argv
    try:
        opts = parse_args(args)
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(raw) > MAX_INPUT_BYTES:
            raise HookError(f"the hook input is over {MAX_INPUT_BYTES} bytes, too large")
        out = answer(read_event(raw), opts)
    except HookError as exc:
        text = str(exc)  # Claude Code shows the line to the user: say it comes from plur
        print(text if text.startswith("plur") else f"plur hook claude-code: {text}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a hook must never take the user's prompt down with a traceback
        print(f"plur hook claude-code: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if out is not None:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0
