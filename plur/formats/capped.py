"""Reading a file from outside within a memory bound (the setting ``max_input_bytes``).

Every reader of data plur did not write (``plur ingest``, ``plur import``, a linked memory folder) reads through
a :class:`Budget`: no file is read whole before it is measured. What counts is what the read will hold in memory,
not the size on disk: the bytes a zip entry or a Zstandard stream decompresses to, and an estimate of the Python
objects its parse builds (:func:`cost`), charged as the bytes stream in. So a decompression bomb stops at the
limit with flat memory, and a document of ten million empty objects is refused before it is parsed. Over the limit
one line names the file, the limit and the setting (:func:`too_large`); nested deeper than the parser goes is one
line too (:func:`parse_json`).

The estimates (CPython 3.11, measured on 16 MiB documents): a JSON value costs 45-80 bytes beside its text, a YAML
node about 470 (PyYAML composes every node before it builds a value), a line of text about 60; the text of a
string takes 1, 2 or 4 bytes a character (ASCII, the rest of the Basic Multilingual Plane, beyond it).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import ValidationError

SETTING = "max_input_bytes"
#: Estimated bytes of memory per parsed value, per form (see the module docstring).
PER_ITEM = {"json": 80, "yaml": 500, "text": 64}
#: What ends a line for str.splitlines() (and so for the readers that split text into lines), in UTF-8.
_BREAKS = (b"\n", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
#: The bytes that can start a value (JSON) or a node (YAML), or end a line: counted, times PER_ITEM.
_MARKS = {"json": (b"{", b"[", b",", b":", *_BREAKS), "yaml": (b":", b",", b"-", b"[", b"{", *_BREAKS),
          "text": _BREAKS}
_ASTRAL = re.compile(rb"[\xf0-\xf4]")  # the lead byte of a UTF-8 character beyond the BMP (4 bytes a character)
#: Bytes read at a time.
CHUNK = 1 << 20
#: Largest Zstandard window accepted (a frame may ask for up to 2 GiB; DSH's logs use 2-8 MiB).
ZSTD_WINDOW = 1 << 25
#: Longest first line read to tell a file's kind (a DSH session header is well under 1 KiB).
HEAD_BYTES = 1 << 20


def default_limit() -> int:
    """The setting ``max_input_bytes`` of the current home (``$PLUR_HOME``: its config.toml, ``PLUR_*`` variables)."""
    from ..config import load_settings

    return load_settings().max_input_bytes


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"


def too_large(where: str, limit: int, what: str = "reading it") -> ValidationError:
    """The one-line refusal of an input over ``limit`` (naming the setting that raises it)."""
    return ValidationError(f"{where}: too large: {what} would take more than {_mib(limit)} of memory, the limit on "
                           f"one input (setting {SETTING} = {limit}); to read it, raise the setting (e.g. "
                           f"PLUR_{SETTING.upper()}={limit * 4}, or in config.toml), and the memory with it")


def width(chunk: bytes | bytearray) -> int:
    """Bytes a character of ``chunk``'s text takes in a Python string: 1 (ASCII), 4 (a character beyond the BMP), else 2."""
    if chunk.isascii():
        return 1
    return 4 if _ASTRAL.search(chunk) else 2


def cost(chunk: bytes | bytearray, form: str) -> int:
    """Estimated bytes of memory reading ``chunk`` takes in ``form`` (``json``, ``yaml`` or ``text``): the bytes
    held, their text as strings, and :data:`PER_ITEM` for each mark that may start a value, a node or a line."""
    n = len(chunk)
    single = bytes(m[0] for m in _MARKS[form] if len(m) == 1)
    marks = n - len(chunk.translate(None, single))  # every one-byte mark in one pass
    if not chunk.isascii():
        marks += sum(chunk.count(m) for m in _MARKS[form] if len(m) > 1)
    return n + n * width(chunk) + PER_ITEM[form] * marks


class Budget:
    """What one input may still take (:func:`cost`), charged chunk by chunk.

    Args:
        where: the input, for messages (a path; ``path!entry`` in a zip).
        limit: bytes (the setting ``max_input_bytes``); ``None`` = :func:`default_limit`.
        form: ``json``, ``yaml`` or ``text``: how the bytes will be parsed.
    """

    def __init__(self, where: str, limit: int | None = None, form: str = "text") -> None:
        self.where, self.form = where, form
        self.limit = default_limit() if limit is None else limit
        self.spent = 0

    def take(self, chunk: bytes | bytearray) -> None:
        """Charge ``chunk``.

        Raises:
            ValidationError: over the limit (:func:`too_large`).
        """
        self.spent += cost(chunk, self.form)
        if self.spent > self.limit:
            raise too_large(self.where, self.limit)

    def check_size(self, size: int) -> None:
        """Refuse at once a stream that says it holds more than the limit (a file's size, a zip entry's)."""
        if size > self.limit:
            raise too_large(self.where, self.limit, f"its {size:,} bytes")


def read_all(stream: IO[bytes], budget: Budget) -> bytearray:
    """The bytes of ``stream``, charged to ``budget`` as they come (never more than the limit is held)."""
    out = bytearray()
    while chunk := stream.read(CHUNK):
        budget.take(chunk)
        out += chunk
    return out


def lines(stream: IO[bytes], budget: Budget) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for each line of ``stream`` that is not blank (``b"\\n"`` ends one; numbers from 1).

    Every line is charged as read, a blank one too (its line break is a mark, :func:`cost`), and a long one piece
    by piece, so a stream of nothing but line breaks is refused as soon as a line-by-line read would be; runs of
    blank lines are skipped in one read each, not line by line.
    """
    if not hasattr(stream, "peek"):
        stream = io.BufferedReader(stream)  # type: ignore[arg-type]
    number = 0
    while True:
        ahead = stream.peek(CHUNK)[:CHUNK]  # type: ignore[attr-defined]
        run = len(ahead) - len(ahead.lstrip())
        if run:  # blank lines (and the blanks that open the next line), read at once
            blank = stream.read(run)
            budget.take(blank)
            number += blank.count(b"\n")
            continue
        piece = stream.readline(CHUNK)
        if not piece:
            return
        budget.take(piece)
        parts = [piece]  # a line longer than CHUNK: held in pieces (each charged) and joined once whole
        while not parts[-1].endswith(b"\n") and (piece := stream.readline(CHUNK)):
            budget.take(piece)
            parts.append(piece)
        number += 1
        yield number, parts[0] if len(parts) == 1 else b"".join(parts)


def open_file(p: Path) -> IO[bytes]:
    """``p`` open for reading, as a regular file (a FIFO or device is refused, never read or waited on).

    Raises:
        ValidationError: missing, unreadable, or not a regular file (naming the path).
    """
    try:
        fh = open(p, "rb")  # noqa: SIM115 - returned
    except FileNotFoundError:
        raise ValidationError(f"no file {str(p)!r}; check the path") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {str(p)!r} ({exc.strerror or exc})") from None
    import stat

    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
        fh.close()
        raise ValidationError(f"{str(p)!r} is not a regular file; give a file or a folder")
    return fh


def read_file(p: Path, budget: Budget) -> bytearray:
    """The bytes of file ``p`` within ``budget`` (its size is checked before anything is read)."""
    with open_file(p) as fh:
        budget.check_size(os.fstat(fh.fileno()).st_size)
        try:
            return read_all(fh, budget)
        except OSError as exc:
            raise ValidationError(f"cannot read {str(p)!r} ({exc.strerror or exc})") from None


def read_text(p: Path, limit: int | None = None, encoding: str = "utf-8", form: str = "text") -> str:
    """The text of file ``p`` (``utf-8-sig`` drops a byte-order mark) within ``limit`` read as ``form``.

    Raises:
        ValidationError: missing, unreadable, not UTF-8, or over the limit (naming the path).
    """
    raw = read_file(p, Budget(str(p), limit, form))
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValidationError(f"cannot read {str(p)!r} as UTF-8 text ({exc})") from None


def zstd_stream(fh: IO[bytes], where: str) -> IO[bytes]:
    """A buffered reader of the text a Zstandard file decompresses to (every frame, in order), decompressed as read.

    Raises:
        ValidationError: ``zstandard`` is missing.
    """
    try:
        import zstandard
    except ImportError:  # pragma: no cover - installed with plur
        raise ValidationError(f"{where} is Zstandard-compressed and the zstandard package is missing; "
                              "pip install zstandard (or reinstall plur)") from None
    reader = zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW).stream_reader(fh, read_across_frames=True)
    return io.BufferedReader(reader, CHUNK)  # type: ignore[arg-type]


def zstd_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a damaged Zstandard stream raises while read."""
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        return ()
    return (zstandard.ZstdError,)


def parse_json(raw: bytes | bytearray | str, where: str) -> Any:
    """One JSON document (orjson, which builds no second copy of the text; :mod:`json` for what only it accepts).

    Raises:
        ValueError: not JSON (:class:`json.JSONDecodeError`, as :func:`json.loads` raises it).
        ValidationError: nested deeper than the parser goes (one line, never a RecursionError).
    """
    try:
        import orjson

        body = memoryview(raw)[3:] if isinstance(raw, (bytes, bytearray)) and raw[:3] == b"\xef\xbb\xbf" else raw
        return orjson.loads(body)
    except ImportError:  # pragma: no cover - orjson is installed with plur
        pass
    except ValueError:
        pass  # NaN, a lone surrogate escape, an integer past 64 bits, or an error: json says which
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8-sig")
        return json.loads(text)
    except RecursionError:
        raise ValidationError(f"{where}: JSON nested too deeply (over about 1,000 levels; a chat export or an "
                              "engram is a few levels deep); refused") from None


#: Deepest nesting of lists and mappings accepted in what becomes an engram's fields (an engram is a few levels deep).
MAX_DEPTH = 64


def check_depth(value: Any, where: str, limit: int = MAX_DEPTH) -> Any:
    """``value`` when its lists and mappings nest at most ``limit`` deep (walked without recursion).

    A parser goes about 1,000 levels deep; what is stored later walks fields recursively, so deeper nesting is
    refused here in one line, not as a RecursionError further in.

    Raises:
        ValidationError: nested deeper than ``limit`` (naming ``where``).
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                raise ValidationError(f"{where} nested too deeply (over {limit} levels of lists or mappings; a note's "
                                      "fields are a few levels deep); refused")
            stack.extend((x, depth + 1) for x in (item.values() if isinstance(item, dict) else item))
    return value


__all__ = ["Budget", "MAX_DEPTH", "PER_ITEM", "SETTING", "check_depth", "cost", "default_limit", "lines", "open_file", "parse_json",
           "read_all", "read_file", "read_text", "too_large", "width", "zstd_stream"]
