"""Generated secrets of every kind the redactor must catch, built at run time from random characters.

Nothing secret-looking is committed to the repository: each test run makes fresh values, so a pattern
that only matched a fixed example would not pass.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Secret:
    kind: str
    # The text as it would appear in a transcript (may include a key name or a URL around the secret).
    text: str
    # The part that must not survive redaction.
    secret: str


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    # Always mix in a digit and a letter so that patterns requiring both see realistic values.
    body = "".join(rng.choice(alphabet) for _ in range(n - 2))
    return (
        body
        + rng.choice(string.digits)
        + rng.choice(string.ascii_lowercase if alphabet != UPPER_NUM else "ABC")
    )


def make_secrets(seed: int = 7) -> list[Secret]:
    rng = random.Random(seed)
    out: list[Secret] = []

    def add(kind: str, secret: str, text: str | None = None) -> None:
        out.append(Secret(kind, text if text is not None else secret, secret))

    add("openai-key", "sk-proj-" + _r(rng, ALNUM + "_-", 48))
    add("openai-key-legacy", "sk-" + _r(rng, ALNUM, 48))
    add("anthropic-key", "sk-ant-api03-" + _r(rng, ALNUM + "_-", 93) + "AA")
    add("aws-access-key", "AKIA" + _r(rng, UPPER_NUM, 16))
    aws_secret = _r(rng, ALNUM + "/+", 40)
    add("aws-secret-key", aws_secret, f"aws_secret_access_key = {aws_secret}")
    add("github-token", "ghp_" + _r(rng, ALNUM, 36))
    add("github-pat", "github_pat_" + _r(rng, ALNUM + "_", 82))
    add("gitlab-token", "glpat-" + _r(rng, ALNUM + "_-", 20))
    add(
        "slack-token",
        "xoxb-" + "-".join(_r(rng, string.digits, 12) for _ in range(2)) + "-" + _r(rng, ALNUM, 24),
    )
    hook = "T" + _r(rng, UPPER_NUM, 8) + "/B" + _r(rng, UPPER_NUM, 8) + "/" + _r(rng, ALNUM, 24)
    add("slack-webhook", hook, f"https://hooks.slack.com/services/{hook}")
    add("google-api-key", "AIza" + _r(rng, ALNUM + "_-", 35))
    add("stripe-key", "sk_live_" + _r(rng, ALNUM, 24))
    azure_key = base64.b64encode(rng.randbytes(64)).decode()
    add(
        "azure-storage-key",
        azure_key,
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={azure_key};EndpointSuffix=core.windows.net",
    )
    sig = _r(rng, ALNUM, 43) + "%3D"
    add("azure-sas", sig, f"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&sp=r&sig={sig}")

    def b64url(n: int) -> str:
        return base64.urlsafe_b64encode(rng.randbytes(n)).decode().rstrip("=")

    jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + b64url(30) + "." + b64url(32)
    add("jwt", jwt)
    pem_body = "\n".join(base64.b64encode(rng.randbytes(48)).decode() for _ in range(6))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"
    add("pem-private-key", pem_body.splitlines()[2], pem)
    bearer = _r(rng, ALNUM + "._-", 40)
    add("bearer-header", bearer, f"curl -H 'Authorization: Bearer {bearer}' https://api.example.com")
    basic = base64.b64encode(f"admin:{_r(rng, ALNUM, 14)}".encode()).decode()
    add("basic-auth-header", basic, f"Authorization: Basic {basic}")
    pw = _r(rng, ALNUM + "!#%^&*", 16)
    add("password-assignment", pw, f"DB_PASSWORD={pw}")
    sec = _r(rng, ALNUM, 32)
    add("secret-json", sec, f'{{"client_secret": "{sec}"}}')
    tok = _r(rng, ALNUM, 28)
    add("token-yaml", tok, f"api_token: {tok}")
    cpw = _r(rng, ALNUM, 18)
    add("connection-string", cpw, f"postgres://app_user:{cpw}@db.internal:5432/prod")
    mpw = _r(rng, ALNUM, 14)
    add("mongodb-uri", mpw, f"mongodb+srv://root:{mpw}@cluster0.example.net/test")
    add("huggingface-token", "hf_" + _r(rng, string.ascii_letters, 34))
    add("npm-token", "npm_" + _r(rng, ALNUM, 36))
    add("stripe-webhook", "whsec_" + _r(rng, ALNUM, 32))
    add("google-oauth", "ya29." + _r(rng, ALNUM + "_-", 60))
    mssql = _r(rng, ALNUM, 16)
    add("sqlserver-connection", mssql, f"Server=tcp:db.example.com;Database=app;User Id=sa;Password={mssql};")
    flag = _r(rng, ALNUM, 20)
    add("password-flag", flag, f"mysql -u root --password={flag} app")
    return out
