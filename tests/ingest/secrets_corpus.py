"""Secrets of 24 kinds, made fresh from random characters on every run (nothing secret-looking is committed).

Each entry is the text as it would sit in a transcript and the part of it that must never be stored.
"""

from __future__ import annotations

import base64
import random
import string

ALNUM = string.ascii_letters + string.digits
UP = string.ascii_uppercase + string.digits


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    # A digit and a lower-case letter at the end so that every value looks like a real generated key.
    return "".join(rng.choice(alphabet) for _ in range(n - 2)) + rng.choice("23456789") + rng.choice("kmnpqr")


def make_corpus(seed: int) -> list[tuple[str, str, str]]:
    """(kind, text in the transcript, secret part)."""
    rng = random.Random(seed)
    out: list[tuple[str, str, str]] = []

    def add(kind: str, secret: str, text: str | None = None) -> None:
        out.append((kind, text or secret, secret))

    add("openai", "sk-proj-" + _rand(rng, ALNUM, 56))
    add("anthropic", "sk-ant-api03-" + _rand(rng, ALNUM + "-_", 90) + "AA")
    aws_id = "AKIA" + "".join(rng.choice(UP) for _ in range(16))
    add("aws-access-key-id", aws_id, f"export AWS_ACCESS_KEY_ID={aws_id}")
    aws_secret = _rand(rng, ALNUM + "/+", 40)
    add("aws-secret", aws_secret, f"aws_secret_access_key = {aws_secret}")
    add("github", "ghp_" + _rand(rng, ALNUM, 36))
    add("github-fine-grained", "github_pat_" + _rand(rng, ALNUM + "_", 82))
    add("gitlab", "glpat-" + _rand(rng, ALNUM, 20))
    add(
        "slack-bot",
        f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**11, 10**12)}-{_rand(rng, ALNUM, 24)}",
    )
    add("google-api", "AIza" + _rand(rng, ALNUM + "_-", 35))
    add("stripe", "sk_live_" + _rand(rng, ALNUM, 30))
    azure = base64.b64encode(rng.randbytes(64)).decode()
    add(
        "azure-storage",
        azure,
        f"DefaultEndpointsProtocol=https;AccountName=store1;AccountKey={azure};EndpointSuffix=core.windows.net",
    )
    sas = _rand(rng, ALNUM, 43) + "%3D"
    add("azure-sas", sas, f"https://store1.blob.core.windows.net/c/x.bin?sv=2024-05-04&sp=r&sig={sas}")

    def b64url(n: int) -> str:
        return base64.urlsafe_b64encode(rng.randbytes(n)).decode().rstrip("=")

    add("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ" + b64url(40) + "." + b64url(32))
    pem_lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(5)]
    add(
        "pem",
        pem_lines[2],
        "-----BEGIN PRIVATE KEY-----\n" + "\n".join(pem_lines) + "\n-----END PRIVATE KEY-----",
    )
    bearer = _rand(rng, ALNUM, 40)
    add("bearer", bearer, f"curl -H 'Authorization: Bearer {bearer}' https://api.internal.test/v1")
    basic = base64.b64encode(f"deploy:{_rand(rng, ALNUM, 16)}".encode()).decode()
    add("basic", basic, f"Authorization: Basic {basic}")
    pw = _rand(rng, ALNUM, 18)
    add("password-assignment", pw, f"DB_PASSWORD={pw}")
    secret = _rand(rng, ALNUM, 32)
    add("secret-json", secret, f'{{"client_secret": "{secret}"}}')
    token = _rand(rng, ALNUM, 30)
    add("token-yaml", token, f"auth_token: {token}")
    pg = _rand(rng, ALNUM, 20)
    add("postgres-url", pg, f"postgresql://svc:{pg}@db.internal:5432/app")
    mongo = _rand(rng, ALNUM, 16)
    add("mongodb-url", mongo, f"mongodb+srv://admin:{mongo}@cluster9.example.net/prod")
    add("huggingface", "hf_" + _rand(rng, string.ascii_letters, 34))
    add("npm", "npm_" + _rand(rng, ALNUM, 36))
    add("google-oauth", "ya29." + _rand(rng, ALNUM + "_-", 64))
    return out
