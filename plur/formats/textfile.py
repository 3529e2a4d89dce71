"""Reading an input file's text (imports, ingest): one clear error naming the path, whatever went wrong."""

from __future__ import annotations

from pathlib import Path

from ..errors import ValidationError


def read_text_file(p: Path, encoding: str = "utf-8") -> str:
    """The UTF-8 text of an input file (``encoding="utf-8-sig"`` also drops a byte-order mark).

    Raises:
        ValidationError: no such file, unreadable, or not UTF-8 (naming the path).
    """
    try:
        return p.read_text(encoding=encoding)
    except FileNotFoundError:
        raise ValidationError(f"no file {str(p)!r}; check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {str(p)!r} as UTF-8 text ({exc})") from None
