"""The Chinese DeepSeek Harness page says what the English one says (issue 48): the same sections in the same
order (each ``##``/``###`` heading carries an explicit ``{#id}``, the same in both), and in each section the same
inline code (commands, settings, paths, messages), the same link targets and the same code blocks (comments,
which are translated, left out). The user page is install and use; internals live on their own page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EN, ZH = ROOT / "docs/hosts/dsh.md", ROOT / "docs/hosts/dsh.zh.md"
HEADING = re.compile(r"^(#{2,3}) (.*?)(?: \{#([\w-]+)\})?\s*$")
CODE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def sections(page: Path) -> list[dict]:
    """``[{"key": "## install", "title", "text", "blocks"}]``: the text before the first heading is ``intro``;
    fenced blocks are kept apart (their lines never read as headings), each without its comments."""
    out = [{"key": "intro", "title": "", "text": [], "blocks": []}]
    fence: list[str] | None = None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if fence is None:
                fence = []
            else:
                out[-1]["blocks"].append("\n".join(fence))
                fence = None
            continue
        if fence is not None:
            kept = re.sub(r"(^|\s+)#.*$", "", line).rstrip()
            if kept:
                fence.append(kept)
            continue
        m = HEADING.match(line)
        if m:
            out.append({"key": f"{m.group(1)} {m.group(3)}", "title": m.group(2), "text": [line], "blocks": []})
        else:
            out[-1]["text"].append(line)
    for s in out:
        s["text"] = "\n".join(s["text"])
    return out


def codes(text: str) -> list[str]:
    """The inline code spans of ``text``, a span broken across lines read as one (whitespace runs as one space)."""
    return sorted({" ".join(c.split()) for c in CODE.findall(text)})


def test_every_section_of_the_english_page_has_an_id() -> None:
    missing = [s["title"] for s in sections(EN) if s["key"].endswith(" None")]
    assert missing == [], f"give these headings an explicit {{#id}} in both pages: {missing}"


def test_the_chinese_page_has_the_english_sections_in_order() -> None:
    assert [s["key"] for s in sections(ZH)] == [s["key"] for s in sections(EN)]


def test_each_section_says_the_same_commands_settings_links_and_code() -> None:
    for en, zh in zip(sections(EN), sections(ZH), strict=True):
        where = f"section {en['key']} ({en['title']!r})"
        assert codes(zh["text"]) == codes(en["text"]), where
        assert sorted(set(LINK.findall(zh["text"]))) == sorted(set(LINK.findall(en["text"]))), where
        assert zh["blocks"] == en["blocks"], where


def test_the_user_page_is_install_and_use() -> None:
    for page in (EN, ZH):
        text = page.read_text(encoding="utf-8")
        assert "plur ingest $DSH_HOME" in text and "PLUR_CAPTURE=off" in text, page.name
        assert "npm run e2e" not in text and "test/session.test.js" not in text, f"{page.name}: tests are internals"
        assert "disabled: false" not in text, f"{page.name}: the old hmr pin"
        assert "dsh-internals.md" in text, f"{page.name} links the contributor page"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "hosts/dsh-internals.md" in nav
