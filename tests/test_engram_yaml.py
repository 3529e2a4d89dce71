"""Engram YAML goes through libyaml's emitter only where it writes the same bytes as PyYAML's own.

A file's bytes must not depend on which emitter wrote it: ``put`` skips a write whose YAML equals the
file, and a hand-kept git history of the engram folder must not see rewrites. The fast path
(:mod:`plur.store.engram_yaml`) is for speed only (bench: ``python -m bench peers``).
"""

from __future__ import annotations

import random

import pytest
import yaml

from plur.store import engram_yaml
from plur.store.engram import Engram

pytestmark = pytest.mark.skipif(engram_yaml._c_dumper() is None, reason="PyYAML built without libyaml")


def _python_emitter(data: dict) -> str:
    _, dumper, _ = engram_yaml._yaml()
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=1 << 30)


def _c_emitter(data: dict) -> str:
    return yaml.dump(data, Dumper=engram_yaml._c_dumper(), sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1 << 30)


TRICKY = ["plain words", "Caroline: Hey Mel! Good to see you!", "- a dash first", "# not a comment", "null", "yes",
          "No", "~", "0x1F", "1e3", "007", "2023-05-08", "'quoted'", '"double"', "a: b", "key:value", "  lead", "trail  ",
          "?", "!tag", "&anchor", "*alias", "{flow}", "[list]", "|", ">", "%", "@", "`", "über straße",
          "我的项目 笔记", "Ωμέγα", "\u00a0nbsp", "a" * 5000, "", " ", "x ", "…ellipsis", "\ufffd"]


@pytest.mark.parametrize("text", TRICKY)
def test_plain_text_is_written_alike_by_both_emitters(text: str) -> None:
    data = {"id": "ENG-2026-01-01-abcdef", "statement": text, "tags": [text, "t"], "source": {"k": text, "turn": 3},
            "pinned": False, "score": 0.25, "none": None}
    assert engram_yaml.plain(data)
    assert _c_emitter(data) == _python_emitter(data) == engram_yaml.dump_yaml(data)


@pytest.mark.parametrize("text", ["two\nlines", "emoji \U0001F600", "nel\x85", "ls\u2028", "bom\ufeff", "bell\x07",
                                  "del\x7f", "c1\x92", "tab\there", "\n", "trailing\n"])
def test_other_text_takes_the_python_emitter(text: str) -> None:
    data = {"statement": text, "tags": ["x"]}
    assert not engram_yaml.plain(data)
    assert engram_yaml.dump_yaml(data) == _python_emitter(data)


def test_fuzzed_text_never_differs_where_the_fast_path_is_taken() -> None:
    rnd = random.Random(42)
    alphabet = ([chr(c) for c in range(0x250)] + [chr(c) for c in (0x2028, 0x2029, 0x3000, 0x4E2D, 0xFEFF, 0xFFFD,
                                                                     0x1F600, 0x10000, 0xD7FF, 0xE000)]
                + list(" " * 30 + ":#-'\"{}[]|>&*!%@`,?" * 3))
    fast = 0
    for _ in range(4000):
        s = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 30)))
        data = {"statement": s, "tags": [s[:4], s[2:7]], "source": {"k": s, "n": 1}}
        if engram_yaml.plain(data):
            fast += 1
            assert _c_emitter(data) == _python_emitter(data), repr(s)
        assert engram_yaml.dump_yaml(data) == _python_emitter(data), repr(s)
    assert fast > 1000


def test_engram_round_trips_through_the_fast_path() -> None:
    e = Engram.create("Melanie: I painted a lake at sunrise", scope="project:kappa", type="user",
                      tags=("art",), source={"kind": "conversation", "session": "s1", "turn": 4})
    assert engram_yaml.plain(e.to_dict())
    assert e.to_yaml() == _python_emitter(e.to_dict())
    assert Engram.from_yaml(e.to_yaml()) == e
