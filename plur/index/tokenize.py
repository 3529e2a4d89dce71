"""The one tokenizer plur uses for engrams (indexing) and queries (recall).

Pipeline, in order:

1. Unicode NFKC normalisation (full-width forms, ligatures and compatibility
   characters fold to their plain form: ``"ｆｉｌｅ"``, ``"ﬁle"`` -> ``"file"``),
   then :meth:`str.casefold` (``"Straße"`` -> ``"strasse"``).
2. Tokens are maximal runs of letters, digits and combining marks of any script
   (Python's ``\\w`` without the underscore, plus Unicode categories Mn/Mc/Me so
   that Devanagari, Thai or Arabic words with vowel signs stay whole).
   Punctuation, symbols, emoji, whitespace and ``_`` separate tokens.
3. Runs of Han, Kana, Hangul and Thai characters (scripts written without spaces
   between words) become overlapping character bigrams: ``"成语接龙"`` ->
   ``["成语", "语接", "接龙"]``; a run of one character stays a unigram. This is
   the CJK bigram scheme of Lucene's ``CJKBigramFilter``; it needs no dictionary
   and a query's bigrams match a document's wherever the query text occurs.
4. English stop words (:data:`STOP_WORDS`, a deliberately small list) are
   dropped. Negations (``no``, ``not``, ``nor``, ``never``) are kept.
5. Optionally, Snowball English stemming (Porter2, via PyStemmer).

Bump :data:`TOKENIZER_VERSION` whenever the output for some input changes:
saved indexes record :attr:`Tokenizer.identity` and are rebuilt on mismatch.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

__all__ = ["STOP_WORDS", "TOKENIZER_VERSION", "TermCoder", "Tokenizer"]

#: Version of the tokenizer's output; saved with every index (see module docstring).
TOKENIZER_VERSION: int = 1

#: English stop words: Lucene's classic English stop set (``EnglishAnalyzer``) minus
#: ``no``/``not``, plus a few auxiliaries and the ``s``/``t`` left over when
#: ``user's``/``don't`` split at the apostrophe. Small on purpose: BM25's idf
#: already discounts common words, and pronouns such as ``i``/``my``/``she``
#: carry meaning in personal memory, so they stay.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a an and are as at be been being but by did do does for from if in into is it its
    of on or s such t than that the their then there these they this those to was were
    will with
    """.split()
)

# Scripts written without spaces between words; their runs become bigrams.
_SPACELESS = (
    "\u0e01-\u0e3a\u0e40-\u0e4e\u0e50-\u0e59"  # Thai letters, vowels, tone marks, digits
    "\u1100-\u11ff\u3131-\u318e\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff"  # Hangul
    "\u3005\u3007\u3021-\u3029"  # 々 〇 and Hangzhou numerals (Han-like)
    "\u3041-\u3096\u3099-\u309a\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"  # Kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"  # Han
)
_SPACELESS_RUN = re.compile(f"[{_SPACELESS}]+")
_SPACELESS_START = re.compile(f"[{_SPACELESS}]")
#: The token pattern on casefolded ASCII text with ``_`` replaced (what ``\\w`` and the marks match there): the big
#: character class of :func:`_word_pattern` costs 27 us a 150-character statement against 9 (issue 49: 2.7 of the
#: ~11 s of CPU of a 100k-engram BM25 build; 98.6% of the statements of the scale bench's store are ASCII).
_ASCII_WORD = re.compile("[a-z0-9]+")


def mark_ranges() -> list[tuple[int, int]]:
    """``(first, last)`` code point ranges of every combining mark (category ``M*``) below U+20000,
    from this Python's :mod:`unicodedata` (~60 ms: it visits every code point)."""
    cat = unicodedata.category
    ranges: list[tuple[int, int]] = []
    start = -1
    for cp in range(0x20001):  # no marks between U+20000 and the variation selectors
        is_mark = cp < 0x20000 and cat(chr(cp))[0] == "M"
        if is_mark and start < 0:
            start = cp
        elif not is_mark and start >= 0:
            ranges.append((start, cp - 1))
            start = -1
    return ranges


@lru_cache(maxsize=1)
def _word_pattern() -> re.Pattern[str]:
    """Compile the token regex: ``\\w`` plus every combining mark (precomputed ranges in
    :mod:`plur.index._marks` when this Python's Unicode version matches, else :func:`mark_ranges`)."""
    from . import _marks

    marks = _marks.MARK_RANGES if unicodedata.unidata_version == _marks.UNIDATA_VERSION else mark_ranges()
    ranges = [f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in marks]
    ranges.append("\U000e0100-\U000e01ef")  # variation selectors supplement (Mn)
    return re.compile(f"[\\w{''.join(ranges)}]+")


_stemmers = threading.local()  # PyStemmer objects must not be shared between threads


def _stem_words(tokens: list[str]) -> list[str]:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import Stemmer  # PyStemmer; a core dependency, imported on first use

        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return stemmer.stemWords(tokens)


class Tokenizer:
    """Turn text into BM25 terms; the same instance serves documents and queries.

    Args:
        stemming: apply the Snowball English stemmer (Porter2, PyStemmer) after
            stop-word removal, so ``"running"`` and ``"runs"`` both become ``"run"``.

    Example:
        >>> Tokenizer()("The user's cat isn't named Tom, 成语接龙!")
        ['user', 'cat', 'isn', 'named', 'tom', '成语', '语接', '接龙']

    Thread-safe: calls share no mutable state (stemmers are per thread).
    """

    __slots__ = ("_stemming", "_word")

    def __init__(self, stemming: bool = False) -> None:
        self._stemming = bool(stemming)
        self._word = _word_pattern()

    @property
    def stemming(self) -> bool:
        """Whether Snowball English stemming is applied."""
        return self._stemming

    @property
    def identity(self) -> str:
        """Name and version of this tokenizer's output, e.g. ``"plur-tok-1+snowball-en"``.

        Saved with an index; an index built under another identity must be rebuilt.
        """
        base = f"plur-tok-{TOKENIZER_VERSION}"
        return base + "+snowball-en" if self._stemming else base

    def __call__(self, text: str) -> list[str]:
        """Tokenize ``text``: :meth:`words`, stemmed when :attr:`stemming`.

        Args:
            text: any Unicode string (a statement or a query).

        Returns:
            Terms in text order, duplicates kept (BM25 counts them); ``[]`` for text
            with no letters or digits, e.g. ``"🙂!!"`` or ``"   "``.
        """
        tokens = self.words(text)
        return _stem_words(tokens) if self._stemming and tokens else tokens

    def stem(self, word: str) -> str:
        """The term one word of :meth:`words` becomes (itself without :attr:`stemming`; stemming is per word)."""
        return _stem_words([word])[0] if self._stemming else word

    def words(self, text: str) -> list[str]:
        """The terms of ``text`` before stemming (steps 1-4 of the module docstring)."""
        text = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
        stop = STOP_WORDS
        if text.isascii():  # the same tokens, ~3x faster: casefolded ASCII has no upper case, marks or bigram scripts
            tokens = [t for t in _ASCII_WORD.findall(text) if t not in stop]
        elif _SPACELESS_START.search(text) is None:
            tokens = [t for t in self._word.findall(text) if t not in stop]
        else:
            tokens = []
            for tok in self._word.findall(_SPACELESS_RUN.sub(r" \g<0> ", text)):
                if _SPACELESS_START.match(tok) is not None:
                    if len(tok) == 1:
                        tokens.append(tok)
                    else:
                        tokens.extend([tok[i : i + 2] for i in range(len(tok) - 1)])
                elif tok not in stop:
                    tokens.append(tok)
        return tokens

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tokenizer) and other.identity == self.identity

    def __hash__(self) -> int:
        return hash(self.identity)

    def __repr__(self) -> str:
        return f"Tokenizer(stemming={self._stemming})  # {self.identity}"


class TermCoder:
    """Texts as term codes for a bulk build: ``coder(text)`` -> ``[terms] int32``, indices into :attr:`vocab`, the
    codes of ``tokenizer(text)``. Each distinct word is stemmed once for the whole build (not once per text it is
    in), and a repeated text is coded once (issue 49).

    Args:
        tokenizer: the index's tokenizer.
        memo: remember each text's codes until :meth:`forget` (the texts of a batch of documents repeat).
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.vocab: list[str] = []  # code -> term
        self._term: dict[str, int] = {}  # term -> code
        self._word: dict[str, int] = {}  # word before stemming -> its term's code
        self._memo: dict[str, Any] = {}

    def __call__(self, text: str) -> Any:
        got = self._memo.get(text)
        if got is None:
            import numpy as np

            word, words = self._word, self.tokenizer.words(text)
            codes = list(map(word.get, words))
            if None in codes:  # a word met for the first time in this build: stemmed once
                for i, w in enumerate(words):
                    if codes[i] is None:
                        codes[i] = word.get(w)
                        if codes[i] is None:
                            codes[i] = word[w] = self._code(self.tokenizer.stem(w))
            got = self._memo[text] = np.array(codes, dtype=np.int32)
        return got

    def _code(self, term: str) -> int:
        code = self._term.get(term)
        if code is None:
            code = self._term[term] = len(self.vocab)
            self.vocab.append(term)
        return code

    def forget(self) -> None:
        """Drop the remembered texts (the words and terms stay)."""
        self._memo = {}
