"""Tests for plur.index.tokenize: literal inputs, hand-written expected tokens."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plur.index.tokenize import STOP_WORDS, TOKENIZER_VERSION, Tokenizer

tok = Tokenizer()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("ｆｉｌｅ　ﬁle", ["file", "file"]),  # NFKC: full-width letters, ideographic space, ligature
        ("Straße STRASSE", ["strasse", "strasse"]),  # casefold, not lower()
        ("snake_case kebab-case", ["snake", "case", "kebab", "case"]),
        ("v2.0 costs $1,500", ["v2", "0", "costs", "1", "500"]),
        ("Москва и Αθήνα", ["москва", "и", "αθήνα"]),
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # vowel signs (Mc/Mn) stay inside the word
        ("cafe\u0301 naïve", ["café", "naïve"]),  # combining accent composed by NFKC
        ("🙂!!", []),
        (" \t\n\u3000 ", []),
        ("", []),
        ("--- ... !!!", []),
    ],
)
def test_words_of_any_script(text: str, expected: list[str]) -> None:
    assert tok(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("成语接龙", ["成语", "语接", "接龙"]),
        ("今天玩成语接龙游戏", ["今天", "天玩", "玩成", "成语", "语接", "接龙", "龙游", "游戏"]),
        ("中", ["中"]),  # a run of one character stays a unigram
        ("x 中 y", ["x", "中", "y"]),
        ("iPhone15手机", ["iphone15", "手机"]),  # script change splits the run
        ("東京2024年", ["東京", "2024", "年"]),
        ("ひらがなカタカナ", ["ひら", "らが", "がな", "なカ", "カタ", "タカ", "カナ"]),
        ("안녕하세요 세계", ["안녕", "녕하", "하세", "세요", "세계"]),
        ("ภาษาไทย", ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]),
        ("ｶﾀｶﾅ", ["カタ", "タカ", "カナ"]),  # half-width kana -> full-width by NFKC
        ("中文，日本語。", ["中文", "日本", "本語"]),  # CJK punctuation separates runs
    ],
)
def test_spaceless_scripts_become_bigrams(text: str, expected: list[str]) -> None:
    assert tok(text) == expected


def test_query_bigrams_are_a_subsequence_of_document_bigrams() -> None:
    doc, query = tok("今天玩成语接龙游戏"), tok("成语接龙")
    n = len(query)
    assert any(doc[i : i + n] == query for i in range(len(doc) - n + 1))


def test_stop_words_dropped_but_negations_kept() -> None:
    assert tok("The cat is on the mat, and it was not there; no, never.") == [
        "cat", "mat", "not", "no", "never"
    ]
    assert {"not", "no", "nor", "never"}.isdisjoint(STOP_WORDS)
    assert 30 <= len(STOP_WORDS) <= 50
    assert tok("The THE the") == []


def test_apostrophes_split_and_leftovers_dropped() -> None:
    assert tok("the user's dog doesn't bark") == ["user", "dog", "doesn", "bark"]


def test_pronouns_are_kept() -> None:
    assert tok("I told my sister she was right") == ["i", "told", "my", "sister", "she", "right"]


def test_stemming_is_optional_and_snowball_english() -> None:
    assert tok("running runs easily") == ["running", "runs", "easily"]
    stem = Tokenizer(stemming=True)
    assert stem("running runs easily") == ["run", "run", "easili"]  # Porter2 output
    assert stem("成语接龙 The") == ["成语", "语接", "接龙"]  # stop words go first; CJK untouched


def test_identity_and_version() -> None:
    assert isinstance(TOKENIZER_VERSION, int)
    assert Tokenizer().identity == f"plur-tok-{TOKENIZER_VERSION}"
    assert Tokenizer(stemming=True).identity == f"plur-tok-{TOKENIZER_VERSION}+snowball-en"
    assert Tokenizer() == Tokenizer()
    assert Tokenizer() != Tokenizer(stemming=True)
    assert hash(Tokenizer(True)) == hash(Tokenizer(True))


def test_stemming_from_many_threads_agrees() -> None:
    stem = Tokenizer(stemming=True)
    text = "connections connected connecting " * 50
    expected = stem(text)
    results: list[list[str]] = []

    def work() -> None:
        for _ in range(200):
            results.append(stem(text))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 800
    assert all(r == expected for r in results)
    assert set(expected) == {"connect"}


def test_precomputed_mark_ranges_match_this_pythons_unicode() -> None:
    """plur.index._marks was generated from unicodedata; a stale table would split words at marks."""
    import unicodedata

    from plur.index import _marks
    from plur.index.tokenize import mark_ranges

    if unicodedata.unidata_version != _marks.UNIDATA_VERSION:
        pytest.skip(f"Unicode {unicodedata.unidata_version} here, table for {_marks.UNIDATA_VERSION} (computed then)")
    assert list(_marks.MARK_RANGES) == mark_ranges()


_PIECE = st.text(alphabet=st.sampled_from(list("ab Zé_'.-9") + ["\u0301", "\u0308", "東", "京", "語", "ﬁ", "Ⅻ", "ß",
                                                               "Σ", "ς", "\t", "は", "한", "🙂", "ｱ", "\u200b"]),
                 max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE, max_size=6), st.booleans())
def test_a_newline_joined_document_tokenizes_as_its_pieces(pieces: list[str], stemming: bool) -> None:
    """IndexSet tokenizes a turn's statement once and reuses it in every document it is part of (issue 30): that
    is only right if no term spans a newline and normalisation does not cross it, whatever the script."""
    tok = Tokenizer(stemming=stemming)
    assert tok("\n".join(pieces)) == [t for p in pieces for t in tok(p)]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_ascii_text_takes_a_shorter_pattern_to_the_same_tokens(text: str) -> None:
    """Issue 49: casefolded ASCII text is cut with ``[a-z0-9]+`` (3x faster than the full pattern of ``\\w`` and every
    combining mark, the BM25 build's largest cost); the tokens must be the full pattern's."""
    import unicodedata

    from plur.index.tokenize import _word_pattern

    folded = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    assert Tokenizer().words(text) == [t for t in _word_pattern().findall(folded) if t not in STOP_WORDS]
