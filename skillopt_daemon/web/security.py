"""The dashboard's guard, run before every request: the Host check, the token, the CSRF cookie, the
same-origin rule for cookie-authenticated writes, and the security headers on every response.

The rules themselves (what a token, a CSRF token and an allowed Host are) live in `auth`; this module
applies them to requests. The only scripts the pages load are the vendored htmx file and nothing inline,
which the Content-Security-Policy enforces.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from skillopt_daemon.web import auth
from skillopt_daemon.web.render import templates

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # "same-origin", not "no-referrer": with no-referrer browsers send `Origin: null` on our own form POSTs.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
CallNext = Callable[[Request], Awaitable[Response]]


class CsrfError(Exception):
    """A cookie-authenticated form came without the session's CSRF token (or with a stale one)."""


def add_security(app: FastAPI, token: str, bound_host: str) -> None:
    """Guard every request to `app` with the dashboard `token`; `bound_host` is the address it serves."""

    @app.middleware("http")
    async def guard(request: Request, call_next: CallNext) -> Response:
        response = await _guarded(request, call_next, token, bound_host)
        for k, v in SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)
        return response

    app.add_exception_handler(CsrfError, _csrf_refused)


async def _guarded(request: Request, call_next: CallNext, token: str, bound_host: str) -> Response:
    if not auth.host_allowed(request.headers.get("host"), bound_host):
        return PlainTextResponse("unknown Host: open the dashboard with `skillopt ui`", status_code=400)
    given = request.query_params.get("token")
    if given is not None:
        return _sign_in(request, token, given)
    if auth.token_matches(token, request.cookies.get(auth.TOKEN_COOKIE)):
        request.state.auth = "cookie"
    elif auth.token_matches(token, auth.bearer(request.headers.get("authorization"))):
        request.state.auth = "bearer"
    else:
        return _refused("this page needs the dashboard's token")
    csrf = request.cookies.get(auth.CSRF_COOKIE)
    new_csrf = None
    if not csrf:
        csrf = new_csrf = auth.new_csrf()
    request.state.csrf = csrf
    if _cross_site_write(request):
        return PlainTextResponse("cross-site request refused", status_code=403)
    response = await call_next(request)
    if new_csrf:
        response.set_cookie(
            auth.CSRF_COOKIE, new_csrf, httponly=True, samesite="strict", path="/", secure=False
        )
    return response


def _sign_in(request: Request, token: str, given: str) -> Response:
    """`?token=` once: swap it for cookies and redirect to the same address without it."""
    if not auth.token_matches(token, given):
        return _refused("the token in the address is not this dashboard's")
    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    target = request.url.path + ("?" + urlencode(rest) if rest else "")
    resp = RedirectResponse(target, status_code=303)
    resp.set_cookie(auth.TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/", secure=False)
    resp.set_cookie(
        auth.CSRF_COOKIE, auth.new_csrf(), httponly=True, samesite="strict", path="/", secure=False
    )
    return resp


def _cross_site_write(request: Request) -> bool:
    """A write authenticated by the cookie that the browser says comes from another site."""
    return (
        request.method not in ("GET", "HEAD")
        and request.state.auth == "cookie"
        and not auth.same_origin(
            request.headers.get("origin"),
            request.headers.get("host"),
            request.headers.get("sec-fetch-site"),
        )
    )


def _refused(why: str) -> Response:
    body = templates.get_template("refused.html").render(why=why)
    return HTMLResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})


async def check_csrf(request: Request) -> None:
    """Cookie-authenticated POSTs must carry the session's CSRF token (a Bearer client cannot be forged).

    A route dependency; raises CsrfError, which the app answers with 403.
    """
    if getattr(request.state, "auth", None) != "cookie":
        return
    form = await request.form()
    sent = form.get(auth.CSRF_FIELD)
    if not isinstance(sent, str) or not auth.token_matches(request.state.csrf, sent):
        raise CsrfError()


async def _csrf_refused(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(
        "the form's CSRF token is missing or stale: reload the page and try again", status_code=403
    )
