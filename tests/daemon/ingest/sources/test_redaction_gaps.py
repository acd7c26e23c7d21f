"""Secrets that used to get through: a private key whose BEGIN line was cut off with the head of a long
output, numeric passwords, passwords given to `mysql -p` and `sshpass -p`, base64-encoded `env` dumps and
passwords in URL query strings."""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

import pytest

from skillopt_daemon.ingest.redact import redact
from skillopt_daemon.ingest.sources import build_source
from skillopt_daemon.ingest.sources.claude_code import ClaudeCodeSource

from .helpers import parsed


def _word(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n - 1)) + rng.choice(string.digits)


def _claude_tool_output(tmp_path: Path, output: str) -> Path:
    base = {"sessionId": "s", "cwd": "/w", "version": "2.1.197", "timestamp": "2026-11-01T00:00:00Z"}
    lines = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "show the key"}},
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "Bash",
                        "input": {"command": "cat ~/.ssh/id_rsa"},
                    }
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": output, "is_error": False}
                ],
            },
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_long_private_key_printed_by_a_tool_leaves_no_part_of_its_body(tmp_path: Path) -> None:
    rng = random.Random()
    body_lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(50)]  # a 4096-bit key's size
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body_lines) + "\n-----END RSA PRIVATE KEY-----\n"
    src = build_source(ClaudeCodeSource, tmp_path, pin_repo=False)
    p = parsed(src, _claude_tool_output(tmp_path, key))
    (result,) = p.results
    excerpt = result.output_excerpt
    assert "[REDACTED:private-key]" in excerpt
    assert not [line for line in body_lines if line[:16] in excerpt]
    assert "END RSA PRIVATE KEY" not in excerpt


def test_a_private_key_in_the_middle_of_a_long_output_is_redacted_wherever_the_cut_falls(
    tmp_path: Path,
) -> None:
    rng = random.Random()
    body_lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(50)]
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(body_lines)
        + "\n-----END OPENSSH PRIVATE KEY-----"
    )
    src = build_source(ClaudeCodeSource, tmp_path, pin_repo=False)
    for filler in (0, 500, 1500, 2500):
        output = "log line\n" * (filler // 9) + key + "\nafter the key\n" + "more output\n" * 40
        p = parsed(src, _claude_tool_output(tmp_path, output))
        (result,) = p.results
        assert not [line for line in body_lines if line[:16] in result.output_excerpt], filler


@pytest.mark.parametrize(
    "template",
    [
        "DB_PASSWORD={n}",
        "MYSQL_ROOT_PASSWORD={n}",
        "export REDIS_PASS={n}",
        'API_KEY="{n}"',
        "SESSION_SECRET={n}\nNEXT=1",
        "GITHUB_TOKEN={n}",
    ],
)
def test_numeric_secrets_in_env_assignments_are_redacted(template: str) -> None:
    value = str(random.randrange(10**5, 10**9))
    out, n = redact(template.format(n=value))
    assert value not in out and n >= 1


@pytest.mark.parametrize(
    "benign", ["MAX_TOKENS=100000", "max_tokens = 4096", "PORT=5432", "NUM_KEYS=1024", "timeout=30000"]
)
def test_numbers_that_are_not_secrets_are_left_alone(benign: str) -> None:
    assert redact(benign) == (benign, 0)


@pytest.mark.parametrize(
    "benign",
    [
        "FAILED tests/test_token.py::test_refresh_expired - AssertionError",
        "tests/auth/test_secret_store.py::TestVault::test_rotate PASSED [ 40%]",
        "let key = SecretKey::from_bytes(&raw)?;",
        "use crate::auth::token::TokenCache;",
    ],
)
def test_test_names_and_paths_with_double_colons_are_not_secrets(benign: str) -> None:
    # What failed is what the night learns from: a test id must reach the store whole.
    assert redact(benign) == (benign, 0)


def test_a_secret_after_a_single_colon_is_still_redacted() -> None:
    value = _word(random.Random(4), 24)
    out, n = redact(f"api_token: {value}")
    assert value not in out and n == 1


@pytest.mark.parametrize(
    "template",
    [
        "mysql -u root -p{s} app",
        "mysqldump -h db -uroot -p{s} prod > dump.sql",
        "mysql -u root -p'{s}' -e 'show databases'",
        "sshpass -p '{s}' ssh admin@host",
        'sshpass -p "{s}" scp a b:',
        "sshpass -p{s} ssh host",
    ],
)
def test_passwords_given_on_the_command_line_are_redacted(template: str) -> None:
    secret = _word(random.Random(), 14)
    out, n = redact(template.format(s=secret))
    assert secret not in out and n >= 1


def test_mysql_without_a_password_value_is_left_alone() -> None:
    for benign in ("mysql -u root -p app", "mysql -P 3306 -h db", "sshpass -f ~/.pw ssh host"):
        assert redact(benign) == (benign, 0)


@pytest.mark.parametrize("wrap", [76, 0])
def test_a_base64_encoded_env_dump_is_redacted(wrap: int) -> None:
    rng = random.Random()
    pw, token = _word(rng, 18), "ghp_" + _word(rng, 36)
    env = f"HOME=/home/me\nSHELL=/bin/bash\nDB_PASSWORD={pw}\nGH={token}\nLANG=C.UTF-8\n"
    encoded = base64.b64encode(env.encode()).decode()
    if wrap:
        encoded = "\n".join(encoded[i : i + wrap] for i in range(0, len(encoded), wrap))
    out, n = redact(f"$ env | base64\n{encoded}\n$ echo done")
    assert n >= 1 and "[REDACTED:" in out
    assert encoded.replace("\n", "")[8:40] not in out.replace("\n", "")
    assert out.startswith("$ env | base64\n") and out.endswith("$ echo done")


def test_base64_without_secrets_inside_is_left_alone() -> None:
    rng = random.Random()
    texts = [
        base64.b64encode(b"just an ordinary sentence, nothing to hide here at all").decode(),
        base64.b64encode(rng.randbytes(64)).decode(),  # binary data
        "sha256 " + "".join(rng.choice("0123456789abcdef") for _ in range(64)),
        "/usr/local/lib/python3/site/packages/AbstractSingletonProxyFactoryBean",
    ]
    for text in texts:
        assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    "template",
    [
        "curl 'https://example.com/login?user=bob&password={s}&next=/'",
        "GET https://example.com/api?pass={s}",
        "https://example.com/cb?pwd={s}#top",
        "open https://example.com/x?key={s}&format=json",
        "https://example.com/hook?access_token={s}",
    ],
)
def test_passwords_in_url_query_strings_are_redacted(template: str) -> None:
    secret = _word(random.Random(), 12)
    out, n = redact(template.format(s=secret))
    assert secret not in out and n >= 1


def test_numeric_password_in_a_url_query_is_redacted() -> None:
    out, n = redact("https://example.com/login?user=bob&password=424242")
    assert "424242" not in out and n == 1
