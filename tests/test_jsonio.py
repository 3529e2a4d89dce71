"""plur.jsonio.loads gives exactly what json.loads gives, orjson or not."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from plur.jsonio import INT_RANGE, loads

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=INT_RANGE[0], max_value=INT_RANGE[1] - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans())
def test_loads_equals_the_stdlib_on_any_document(value, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert loads(text.encode("utf-8")) == json.loads(text)
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ['[NaN, Infinity]', '"\\ud800x"',
                                  '{"a": 1, "a": 2}'])
def test_what_orjson_refuses_or_reads_differently_is_parsed_as_the_stdlib_does(text: str) -> None:
    got, want = loads(text.encode()), json.loads(text)
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in want.items()}
    if text.startswith("[NaN"):
        assert math.isnan(got[0]) and got[1] == math.inf and len(got) == 2
    else:
        assert got == want
        if isinstance(want, list):
            assert [type(v) for v in got] == [type(v) for v in want]


def test_invalid_json_raises_value_error_from_the_stdlib() -> None:
    with pytest.raises(json.JSONDecodeError, match="Expecting"):
        loads(b'{"a": ')
    with pytest.raises(UnicodeDecodeError):
        loads(b'"\xff"')
