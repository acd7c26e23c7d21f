"""Which addresses are this machine: the one rule for `local_only`, keyless local backends and the dashboard."""

from __future__ import annotations

from urllib.parse import urlparse

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback_host(host: str | None) -> bool:
    """Whether a host name or address (`[::1]` brackets allowed) is this machine's loopback."""
    name = (host or "").strip().strip("[]").lower()
    return name in LOOPBACK_NAMES or name.startswith("127.")


def is_loopback_url(url: str | None) -> bool:
    """Whether a base URL points at this machine (no key needed; allowed under `local_only`)."""
    return bool(url) and is_loopback_host(urlparse(str(url)).hostname)
