"""The readers' fast JSON decoding gives the standard library's values and errors on every input."""

from __future__ import annotations

import json
import math

import pytest

from skillopt_daemon.ingest.sources.base import SourceError, decode_json_line, loads_json

SAME = [
    b'{"type": "user", "message": {"content": "h\\u00e9llo \\ud83d\\ude00"}}',
    b"18446744073709551616",  # over 64 bits: stays an exact int
    b"-123456789012345678901234567890",
    b'{"a": 1, "a": 2}',
    b"[1.5, -0.0, 1e-7, 3]",
    b'"a\\u0000b"',
    b'["\\ud800"]',  # a lone surrogate
    b"[NaN, Infinity]",
    b"1e400",
]


@pytest.mark.parametrize("raw", SAME)
def test_values_are_the_standard_librarys(raw: bytes) -> None:
    expected = json.loads(raw)
    got = loads_json(raw)
    assert repr(got) == repr(expected) or (isinstance(got, float) and math.isnan(got))
    assert type(got) is type(expected)
    assert repr(decode_json_line(raw + b"\n")) == repr((expected, False))


def test_invalid_utf8_is_replaced_and_flagged() -> None:
    value, bad = decode_json_line(b'{"text": "caf\xe9"}\n')
    assert value == {"text": "caf\ufffd"} and bad


@pytest.mark.parametrize("raw", [b"{not json", b"[" * 5000 + b"]" * 5000, b'{"a": }'])
def test_bad_lines_are_source_errors(raw: bytes) -> None:
    with pytest.raises(SourceError) as err:
        decode_json_line(raw)
    assert err.value.reason == "invalid json"
    with pytest.raises((ValueError, RecursionError)):
        loads_json(raw)
