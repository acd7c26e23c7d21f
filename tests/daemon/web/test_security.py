"""Who may use the dashboard, and what a page may never do: the token, cross-site requests, hostile text."""

from __future__ import annotations

import os
import re
import stat
from html.parser import HTMLParser
from typing import Any

import pytest
from world import XSS, XSS_SESSION, World

PAGES = ["/", "/sessions", "/tasks", "/proposals", "/skills", "/runs", "/settings"]


@pytest.mark.parametrize("path", [*PAGES, "/static/htmx.min.js", "/api/status"])
def test_without_the_token_every_request_is_refused(anon: Any, path: str) -> None:
    r = anon.get(path, follow_redirects=False)
    assert r.status_code == 401
    if path in PAGES:
        assert "skillopt ui" in r.text  # tells the user how to get in


def test_a_wrong_token_is_refused_and_sets_no_cookie(anon: Any) -> None:
    r = anon.get("/?token=not-the-token", follow_redirects=False)
    assert r.status_code == 401
    assert "set-cookie" not in r.headers


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_address(anon: Any, token: str) -> None:
    r = anon.get(f"/sessions?q=fix&token={token}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/sessions?q=fix"
    cookies = r.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("skillopt_token="))
    assert "HttpOnly" in session and "samesite=strict" in session.lower()
    assert any(c.startswith("skillopt_csrf=") for c in cookies)
    assert anon.get("/sessions?q=fix").status_code == 200


def test_a_bearer_token_works_for_scripts(anon: Any, token: str) -> None:
    r = anon.get("/api/status", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200
    assert r.json()["pending"]["items"]
    assert anon.get("/api/status", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_the_token_file_is_private_and_stable(world: World, token: str) -> None:
    from skillopt_daemon.core import paths
    from skillopt_daemon.service.dashboard import ensure_token

    mode = stat.S_IMODE(os.stat(paths.token_file()).st_mode)
    assert mode == 0o600
    assert ensure_token() == token
    assert len(token) >= 32


def test_a_post_without_the_csrf_token_changes_nothing(client: Any, world: World) -> None:
    r = client.post(f"/proposals/{world.second_id}/reject", data={"reason": "forged"}, follow_redirects=False)
    assert r.status_code == 403
    assert _state(world.second_id) == "proposed"


def test_a_cross_site_post_is_refused_even_with_a_csrf_token(client: Any, world: World) -> None:
    csrf = _csrf(client, f"/proposals/{world.second_id}")
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        r = client.post(
            f"/proposals/{world.second_id}/reject",
            data={"reason": "forged", "csrf_token": csrf},
            headers=headers,
            follow_redirects=False,
        )
        assert r.status_code == 403
    assert _state(world.second_id) == "proposed"


def test_a_foreign_host_name_is_refused(client: Any) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: the Host header gives it away."""
    r = client.get("/", headers={"Host": "attacker.example:8765"})
    assert r.status_code == 400


def test_every_page_forbids_inline_script_and_carries_none(client: Any, world: World) -> None:
    pages = [*PAGES, f"/sessions/{XSS_SESSION}", f"/proposals/{world.proposal_id}", f"/runs/{world.run_id}"]
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200, path
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert r.headers["x-frame-options"] == "DENY"
        tags = _Tags(r.text)
        assert tags.scripts == [{"src": "/static/htmx.min.js", "defer": None}], path
        assert not tags.handlers, f"inline event handlers on {path}: {tags.handlers}"
        assert not tags.styles, f"inline styles on {path} (the CSP would block them)"


def test_a_transcript_with_markup_is_shown_as_text(client: Any) -> None:
    r = client.get(f"/sessions/{XSS_SESSION}")
    assert r.status_code == 200
    assert XSS not in r.text
    assert "&lt;script&gt;window.__pwned = 1;" in r.text
    # The same prompt appears in search results and the mined task family, escaped there too.
    assert XSS not in client.get("/sessions?q=pwned").text
    assert "&lt;script&gt;" in client.get("/sessions?q=pwned").text


def test_non_loopback_binding_is_warned_about() -> None:
    from skillopt_daemon.service.dashboard import exposure_warning
    from skillopt_daemon.web.auth import host_allowed

    assert exposure_warning("127.0.0.1") is None
    assert "not only on this machine" in (exposure_warning("0.0.0.0") or "")
    assert host_allowed("192.168.1.5:8765", "192.168.1.5")
    assert not host_allowed("192.168.1.5:8765", "127.0.0.1")


class _Tags(HTMLParser):
    """The page as a browser parses it: script elements, on* attributes and style attributes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[str] = []
        self.styles: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts.append(dict(attrs))
        for name, _ in attrs:
            if name.startswith("on"):
                self.handlers.append(f"{tag} {name}")
            if name == "style":
                self.styles.append(tag)


def _state(version_id: str) -> str:
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.registry import Registry

    db = open_db()
    try:
        return Registry(db).get_version(version_id).state
    finally:
        db.conn.close()


def _csrf(client: Any, path: str) -> str:
    m = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    assert m, "the page has no form with a CSRF token"
    return m.group(1)
