"""Fast JSON parsing of plur's own large files (store manifest, index manifests, id and term lists).

:func:`loads` parses with orjson (faster than :mod:`json` on the 4 MB manifest of a 10k-engram store,
which every cold process reads) and falls back to :func:`json.loads` for what orjson refuses and
:mod:`json` accepts (``NaN``, lone surrogate escapes). One difference stays: orjson reads an integer
outside ``[-2**63, 2**64)`` as a float. So :func:`loads` is for files plur writes and never puts such
an integer in (the store manifest leaves a row's engram data out when it holds one, see
:func:`plur.store.manifest.save_manifest`); other JSON goes through :mod:`json`. Writing stays with :mod:`json`.
"""

from __future__ import annotations

import json
from typing import Any

try:  # a core dependency; the stdlib path keeps plur working where a wheel is missing
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is installed with plur
    _orjson = None

__all__ = ["INT_RANGE", "loads"]

#: Integers orjson reads exactly: ``INT_RANGE[0] <= n < INT_RANGE[1]`` (int64 and uint64).
INT_RANGE = (-(2 ** 63), 2 ** 64)


def loads(data: bytes | str) -> Any:
    """Parse one JSON document (UTF-8 ``bytes`` or ``str``) that holds no integer outside :data:`INT_RANGE`.

    Raises:
        ValueError: not valid JSON (:class:`json.JSONDecodeError`, as :func:`json.loads` raises);
            UnicodeDecodeError (a ValueError) for bytes that are not UTF-8.
    """
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # parse again below: same result or the stdlib's error message
    return json.loads(data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data)


def request_json(raw: bytes, where: str) -> Any:
    """Parse a request body as JSON for a door that takes one (the service's API, the pages' JSON actions).

    Everything a client can send that :mod:`json` accepts but plur cannot store or print is refused here as
    one 400-kind error, never a 500 further in: a document nested deeper than the parser's recursion
    limit (``[[[[...`` 100,000 deep), and a lone surrogate escape (``"\\ud800"``), which no UTF-8 text holds.

    Args:
        raw: the body (``b""`` reads as ``{}``).
        where: the door, for the message (``POST /api/v1/learn``).

    Raises:
        ValidationError: not JSON, nested too deep, or a string holding a lone surrogate.
    """
    from .errors import ValidationError

    try:
        body = json.loads(raw or b"{}")
    except RecursionError:
        raise ValidationError(f"{where}: the JSON body is nested too deep; send a flat object of fields") from None
    except ValueError as exc:
        raise ValidationError(f"{where}: the body is not valid JSON ({exc})") from None
    stack = [body]
    while stack:   # iterative: the parser's own depth limit already bounds it
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValidationError(f"{where}: the text {item[:40]!r} holds a lone surrogate ({exc.reason}); "
                                      "send valid Unicode (a pair of \\uD8xx\\uDCxx escapes, or UTF-8)") from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return body
