"""Issue 38: a resumed-and-forked Claude Code session (``claude --resume ID --fork-session``) gets a new
session_id but a copy of the old history, blocks included; the hook must not inject again the notes that
history already holds (it read the new id as a new conversation and re-injected everything)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from plur.memory import Memory


def _hook(home: Path, event: dict[str, Any]) -> dict[str, Any] | None:
    env = {**os.environ, "PLUR_HOME": str(home), "PLUR_MODEL": "none", "PLUR_AUTOSTART_SERVICE": "false",
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "plur", "hook", "claude-code"], input=json.dumps(event),
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def _context(out: dict[str, Any] | None) -> str:
    return out["hookSpecificOutput"]["additionalContext"] if out else ""


def test_a_forked_session_does_not_reinject_what_its_copied_history_holds(plur_home: Path, tmp_path: Path) -> None:
    with Memory(plur_home, model="none") as mem:
        rex = mem.learn("The user's dog is called Rex.").id
        kestrel = mem.learn("The staging cluster is named kestrel.").id
    question = "what is my dog called?"
    first = _context(_hook(plur_home, {"session_id": "orig", "hook_event_name": "UserPromptSubmit",
                                       "prompt": question}))
    assert rex in first
    transcript = tmp_path / "orig.jsonl"          # Claude Code's transcript: the block went in as hook context
    lines = [{"type": "user", "message": {"role": "user", "content": question}},
             {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": [first],
                                                   "hookEvent": "UserPromptSubmit"}},
             {"type": "assistant", "message": {"role": "assistant", "content": "Your dog is Rex."}}]
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    fork = tmp_path / "fork.jsonl"                 # --fork-session copies the history under a new id
    fork.write_bytes(transcript.read_bytes())
    _hook(plur_home, {"session_id": "forked", "hook_event_name": "SessionStart", "source": "resume",
                      "transcript_path": str(fork)})
    again = _context(_hook(plur_home, {"session_id": "forked", "hook_event_name": "UserPromptSubmit",
                                       "prompt": "and what is my dog called again?", "transcript_path": str(fork)}))
    assert rex not in again, again                 # the copied history holds it already
    other = _context(_hook(plur_home, {"session_id": "forked", "hook_event_name": "UserPromptSubmit",
                                       "prompt": "which cluster is staging?", "transcript_path": str(fork)}))
    assert kestrel in other                        # what it does not hold is still shown
    fresh = _context(_hook(plur_home, {"session_id": "fresh", "hook_event_name": "UserPromptSubmit",
                                       "prompt": question}))
    assert rex in fresh                            # a new conversation starts from nothing, as before
