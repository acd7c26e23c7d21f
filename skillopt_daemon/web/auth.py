"""The dashboard's access token and its cross-site request protection.

The token lives in a 0600 file in the data folder (`service.dashboard.ensure_token`), so only the user (and programs running as the user)
can open the dashboard; a web page on another site can neither read it nor make the browser use it:

- The token arrives once as `?token=` (what `skillopt ui` opens) and is swapped for an HttpOnly,
  SameSite=Strict cookie; programs may send `Authorization: Bearer <token>` instead.
- A POST authenticated by the cookie must also carry the session's CSRF token in its form and, when the
  browser says where it comes from (`Origin`, `Sec-Fetch-Site`), come from the dashboard itself.
- The `Host` header must name the address the dashboard serves, so a DNS-rebinding page cannot talk to it.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

TOKEN_COOKIE = "skillopt_token"
CSRF_COOKIE = "skillopt_csrf"
CSRF_FIELD = "csrf_token"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def token_matches(expected: str, given: str | None) -> bool:
    return bool(given) and secrets.compare_digest(expected.encode(), str(given).encode())


def bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def new_csrf() -> str:
    return secrets.token_urlsafe(24)


def host_allowed(host_header: str | None, bound_host: str) -> bool:
    """Whether the request names this dashboard: loopback names, or the address configured to bind."""
    if not host_header:
        return False
    name = urlsplit(f"//{host_header}").hostname or ""
    allowed = set(LOOPBACK_HOSTS)
    if bound_host not in ("0.0.0.0", "::", ""):
        allowed.add(bound_host.strip("[]"))
    return name in allowed or f"[{name}]" in allowed


def same_origin(origin: str | None, host_header: str | None, fetch_site: str | None) -> bool:
    """False when the browser says the request comes from another site."""
    if fetch_site and fetch_site not in ("same-origin", "none"):
        return False
    if origin and origin != "null":
        return urlsplit(origin).netloc == (host_header or "")
    return origin != "null"
