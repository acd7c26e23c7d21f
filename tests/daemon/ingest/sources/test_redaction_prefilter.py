"""The redactor's one-pass searches (hyperscan: trigger words, and the whole patterns over ASCII text) and
the pure-Python fallback redact exactly the same secrets, so a platform without the wheel is as safe as
one with it, only slower."""

from __future__ import annotations

import base64
import random
import string
from concurrent.futures import ThreadPoolExecutor

import pytest

from skillopt_daemon.ingest import trigger_scan
from skillopt_daemon.ingest.redact import _B64_RUN, Redactor
from skillopt_daemon.ingest.trigger_scan import PatternPrefilter, TriggerScanner
from skillopt_lib.secrets import PATTERNS as BUILTIN_PATTERNS
from testkit.fixtures import require

from .secrets_corpus import make_secrets


def _texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    secrets = make_secrets(seed)
    filler = [
        "5 passed, 1 failed in 0.31s",
        "def get_token(self): return self._token",
        "export PATH=$HOME/bin:$PATH",
        "Ünïcödé wörds and a ǅ digraph; İstanbul",  # lower() changes the length of some of these
        "see https://example.com/docs?sig=short",
        "tests/test_token.py::test_refresh_token FAILED",
        "let key = SecretKey::from_bytes(&raw_key_bytes)?;",
        "sep\x1cpassword:\x1chunter2hunter2",  # `re`'s \s matches U+001C, hyperscan's does not
        "",
    ]
    out = []
    for _ in range(300):
        parts = [rng.choice(filler) for _ in range(rng.randrange(1, 6))]
        for _ in range(rng.randrange(0, 3)):
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(secrets).text)
        out.append(rng.choice(["\n", " ", "; "]).join(parts))
    return out + [s.text for s in secrets]


def test_fallback_redacts_the_same_as_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts(11)
    native = Redactor(["internal-[0-9]{6}"])
    assert native._scanner.native
    monkeypatch.setattr(trigger_scan, "hyperscan", None)
    fallback = Redactor(["internal-[0-9]{6}"])
    assert not fallback._scanner.native
    redacted = 0
    for text in texts:
        fast = native.redact(text)
        slow = fallback.redact(text)
        assert fast == slow
        redacted += fast[1]
    assert redacted >= len(make_secrets(11))
    for secret in make_secrets(11):
        assert secret.secret not in fallback.redact(secret.text)[0]


@pytest.mark.parametrize("native", [True, False])
def test_scanner_finds_every_occurrence(native: bool) -> None:
    scanner = TriggerScanner(["ab", "aba", "b", "xyz"], native=native)
    assert scanner.positions("abababx") == {"ab": [0, 2, 4], "aba": [0, 2], "b": [1, 3, 5]}
    assert set(scanner.positions("--aba--")) == {"ab", "aba", "b"}
    assert scanner.positions("nothing here") == {}
    assert scanner.positions("") == {}


@pytest.mark.parametrize("native", [True, False])
def test_offsets_are_characters_not_bytes(native: bool) -> None:
    scanner = TriggerScanner(["key", "é-k"], native=native)
    text = "ünï key 😀 key \ud800 é-key"
    assert scanner.positions(text) == {"key": [4, 10, 18], "é-k": [16]}
    assert all(text[i : i + 3] == "key" for i in scanner.positions(text)["key"])


def test_one_redactor_serves_several_threads() -> None:
    redactor = Redactor()
    texts = _texts(5)
    expected = [redactor.redact(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: [redactor.redact(t) for t in texts], range(8)))
    assert all(r == expected for r in results)


@pytest.mark.parametrize("native", [True, False])
def test_scanner_tells_whether_a_long_run_occurs(native: bool) -> None:
    scanner = TriggerScanner(["key"], native=native, presence={"run": "[a-z0-9+/]{20}"})
    long_run = "a key: " + "abcdefghij0123456789+/"
    assert scanner.scan(long_run).present == {"run"}
    assert scanner.scan(long_run).positions == {"key": [2]}
    assert scanner.scan("a key: abcdefghij0123456789").present == {"run"}
    assert scanner.scan("a key: abcdefghij-0123456789").present == frozenset()
    assert scanner.scan("ü" * 5 + "x" * 25).present == {"run"}
    assert scanner.scan("").present == frozenset()


def _encoded_envs(seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for secret in make_secrets(seed)[:40]:
        encoded = base64.b64encode(f"HOME=/home/me\n{secret.text}\nLANG=C\n".encode()).decode()
        wrapped = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
        before = rng.choice(["$ env | base64\n", "Ünïcödé İ: ", "ǅ digraph ", ""])
        out.append(before + rng.choice([encoded, wrapped]) + rng.choice(["", "\n$ echo done"]))
    return out


@pytest.mark.parametrize("native", [True, False])
def test_texts_skipped_by_the_base64_prefilter_hold_no_encoded_secret(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(trigger_scan, "hyperscan", None)
    redactor = Redactor(["internal-[0-9]{6}"])
    encoded = _encoded_envs(7)
    found = 0
    for text in _texts(13) + encoded:
        out, n = redactor.redact(text)
        # The base64 pass run on everything the redactor left finds nothing more.
        assert redactor._redact_encoded(out) == (out, 0)
        found += text in encoded and n > 0
    assert found == len(encoded)


def _near_misses(seed: int) -> list[str]:
    """ASCII texts around the secrets: cut, case-flipped, with a character changed or put in between."""
    rng = random.Random(seed)
    noise = string.ascii_letters + string.digits + " \t\n:=\"'-_./+\x1c\x1f"
    out = []
    for secret in make_secrets(seed):
        text = secret.text
        for _ in range(6):
            chars = list(text)
            for _ in range(rng.randrange(1, 4)):
                at = rng.randrange(len(chars) + 1)
                op = rng.randrange(4)
                if op == 0:
                    chars.insert(at, rng.choice(noise))
                elif op == 1 and at < len(chars):
                    chars[at] = rng.choice(noise)
                elif op == 2 and at < len(chars):
                    chars[at] = chars[at].swapcase()
                else:
                    del chars[at:]
            out.append("".join(chars))
    return [t for t in out if t.isascii()]


def test_a_text_the_pattern_prefilter_rules_out_matches_no_pattern() -> None:
    require(trigger_scan.hyperscan is not None, "hyperscan is not installed on this platform")
    prefilter = PatternPrefilter([p.regex for p in BUILTIN_PATTERNS])
    texts = _near_misses(3) + [t for t in _texts(17) if t.isascii()]
    ruled_out = 0
    for text in texts:
        if not prefilter.may_match(text):
            ruled_out += 1
            assert not any(p.regex.search(text) for p in BUILTIN_PATTERNS), text
    assert 0 < ruled_out < len(texts)  # it does rule some out, and it does not rule out everything
    assert prefilter.may_match("sep\x1cnothing") is True
    with pytest.raises(ValueError):
        prefilter.may_match("Ünïcödé")


def test_near_misses_are_redacted_the_same_with_and_without_hyperscan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = _near_misses(5)
    native = Redactor()
    monkeypatch.setattr(trigger_scan, "hyperscan", None)
    fallback = Redactor()
    assert native._prefilter is not None or trigger_scan.hyperscan is None
    assert fallback._prefilter is None
    assert [native.redact(t) for t in texts] == [fallback.redact(t) for t in texts]
    assert not any(
        _B64_RUN.search(out) and fallback._redact_encoded(out)[1] for out, _ in map(native.redact, texts)
    )


def test_a_short_text_seen_again_is_redacted_and_counted_again() -> None:
    # Tool names, folders and branches repeat on every line: the redactor remembers what it made of them.
    redactor = Redactor()
    secret = "DB_PASSWORD=73914468"
    assert redactor.redact(secret) == ("DB_PASSWORD=[REDACTED:secret-assignment]", 1)
    assert redactor.redact(secret) == ("DB_PASSWORD=[REDACTED:secret-assignment]", 1)
    assert redactor.redact("Bash") == ("Bash", 0)
    for i in range(5000):  # the memory is bounded, and what it forgets is worked out again
        redactor.redact(f"branch-{i}")
    assert len(redactor._short) <= 4096
    assert redactor.redact(secret) == ("DB_PASSWORD=[REDACTED:secret-assignment]", 1)
