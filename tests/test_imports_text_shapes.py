"""Text a person imports is read as what it is (issue 48): paragraphs are notes, never ChatGPT's saved memories,
and claude.ai's settings export copied without its banner still loses its ``[unknown] -`` markers."""

from __future__ import annotations

import json
from pathlib import Path


def preview(run, path: Path) -> list[dict]:  # noqa: ANN001 - the run fixture
    r = run("import", str(path), "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["preview"]


def test_two_paragraphs_of_plain_text_are_notes(run, tmp_path: Path) -> None:
    """Two one-line paragraphs worded as ChatGPT words a memory were imported as ChatGPT's saved memories
    (type user, tag chatgpt-import)."""
    src = tmp_path / "notes.txt"
    src.write_text("Prefers dark mode in every editor.\n\nHas a dog called Rex.\n", encoding="utf-8")
    got = preview(run, src)
    assert [e["statement"] for e in got] == ["Prefers dark mode in every editor.", "Has a dog called Rex."]
    assert all("notes-import" in e["tags"] and "chatgpt-import" not in e["tags"] for e in got)
    src.write_text("Saved memories\n\nPrefers dark mode in every editor.\n\nHas a dog called Rex.\n")
    assert all("chatgpt-import" in e["tags"] for e in preview(run, src))  # under the dialog's title: ChatGPT's


def test_a_claude_settings_export_without_its_banner_drops_the_markers(run, tmp_path: Path) -> None:
    """Copied without its `=== MEMORY EXPORT ===` header, the export was read as notes and every statement kept
    its `[unknown] -` marker (two facts of a section joined into one note)."""
    src = tmp_path / "claude.txt"
    src.write_text("## IDENTITY\n[unknown] - Name is Sam.\n[2026-05-02] - Works at Acme.\n\n"
                   "## PREFERENCES\n[unknown] - Likes green tea.\n", encoding="utf-8")
    got = preview(run, src)
    assert [e["statement"] for e in got] == ["Name is Sam.", "Works at Acme.", "Likes green tea."]
    assert all("claude-import" in e["tags"] for e in got)
    assert got[1]["created"].startswith("2026-05-02")
    prose = tmp_path / "prose.txt"   # one bracketed line in prose is no export
    prose.write_text("[unknown] - a marker I typed.\nAnd a line of my own.\n\nAnother paragraph here.\n")
    assert all("notes-import" in e["tags"] for e in preview(run, prose))
