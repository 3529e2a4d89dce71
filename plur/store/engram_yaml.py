"""Engram YAML text: plur's dumper (literal blocks for multi-line text), on libyaml's emitter where that is safe.

PyYAML's pure-Python emitter costs ~1 ms per engram on an idle core (6.6 ms at load 12 on 2 cores), the
largest CPU cost of writing a conversation turn after the fsync. libyaml's emitter (``CSafeDumper``) is ~6x
faster and writes the same bytes for :data:`_PLAIN_TEXT`; where the two differ (emoji, which libyaml
escapes; blank-line texts in literal blocks; control characters) the Python emitter is kept, so a file's
bytes never depend on which emitter wrote it (``put`` compares bytes, git diffs stay empty).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

#: Text both YAML emitters write byte for byte alike: printable BMP characters without line breaks (no C0/C1
#: controls, U+2028/U+2029, surrogates, U+FEFF or U+FFFE/U+FFFF). Checked against PyYAML's emitter over every
#: LoCoMo turn and fuzzed text (tests/test_engram_yaml.py).
_PLAIN_TEXT = re.compile("[\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]*\\Z")


def dump_yaml(data: dict[str, Any]) -> str:
    """Deterministic block-style YAML of an engram's :meth:`~plur.store.engram.Engram.to_dict`."""
    yaml, dumper, _ = _yaml()
    fast = _c_dumper() if plain(data) else None
    return yaml.dump(data, Dumper=fast or dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1 << 30)


def plain(value: Any) -> bool:
    """Every string in ``value`` (keys too) is :data:`_PLAIN_TEXT`, and it holds only YAML's plain types."""
    t = type(value)
    if t is str:
        return _PLAIN_TEXT.match(value) is not None
    if t is dict:
        return all(type(k) is str and _PLAIN_TEXT.match(k) is not None and plain(v) for k, v in value.items())
    if t is list or t is tuple:
        return all(plain(v) for v in value)
    return t is int or t is bool or t is float or value is None


@cache
def _c_dumper() -> type | None:
    """plur's dumper on libyaml's emitter, or None when PyYAML was built without libyaml."""
    import yaml

    base = getattr(yaml, "CSafeDumper", None)
    if base is None:
        return None

    class _CDumper(base):  # type: ignore[misc, valid-type]
        pass

    _CDumper.add_representer(str, _str_representer)
    return _CDumper


def _str_representer(dumper: Any, value: str) -> Any:
    # Multi-line text reads best as a literal block; PyYAML falls back to a
    # double-quoted scalar by itself when a literal block cannot hold the text
    # exactly (trailing spaces, special characters), so the round trip is exact.
    # U+0085, U+2028 and U+2029 are line breaks to a YAML reader: only a double-quoted scalar
    # (which escapes them) keeps them exactly.
    if any(c in value for c in "\x85\u2028\u2029"):
        style: str | None = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


@cache
def _yaml() -> tuple[Any, type, type]:
    """PyYAML with plur's dumper and loader, imported on first use (the CLI's service path never needs it)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(str, _str_representer)

    class _Loader(yaml.SafeLoader):
        pass

    # Keep timestamps as strings; parse_time() normalises them (and keeps tz-less ones as UTC).
    _Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in _Loader.yaml_implicit_resolvers.copy().items()
    }
    return yaml, _Dumper, _Loader
