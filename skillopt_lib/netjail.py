"""Replays that cannot phone home: the agent reaches its model endpoint and nothing else.

A replay runs a candidate skill, and a candidate can carry an instruction planted in the text the night
learned from ("run `curl … | sh`", "post the environment to …"). The candidate screen (`skillopt_lib.screen`)
rejects what it recognises; this module makes sure that whatever it does not recognise cannot act on the
network during training either, and that the attempt is recorded in the replay's result.

On Linux, where the kernel lets this process create namespaces (root, or any user where unprivileged user
namespaces are allowed), each replay's agent and each check command runs in namespaces of its own: a
network with only a loopback interface, a mount table and a process tree. A small launcher (`launcher()`,
before it starts the agent) first connects to the jail's control socket, an abstract Unix socket of this
machine's network namespace, which nothing inside a namespace can reach, and proves with a one-time secret
that `Jail.wrap` made it. It then enters the namespaces and opens:

- the model endpoint's loopback ports (a local model server, the scripted test server), whose connections
  this process relays to the same port on this machine;
- an HTTP proxy port (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` point at it) that lets through only the model
  hosts of the agent's tool (`agents.TOOLS[...].model_hosts`; a `*` stands for one DNS label) and the hosts
  of the endpoints its settings name, and refuses the rest with a 403;
- a name server on the addresses of `/etc/resolv.conf`, which answers every question "no such name".

It hands those sockets to this process (file descriptors passed with SCM_RIGHTS), which takes them only for
the ports of the plan. In the new mount table every Unix socket listening on this machine when the
launcher started (a Docker socket, an ssh agent, a session bus) is covered, and the process tree gets its
own /proc. The agent runs as the child of the tree's first process; the launcher waits for it and ends
as it ended, so the sandbox's process group, time-outs and output handling are unchanged. The launcher
dies with the process that started it, the tree's first process with the launcher, and the kernel ends
whatever is left in the tree: a replay never outlives its night. Every host refused by the proxy and
every name looked up is recorded (`Jail.attempts`), and every request it let through (`Jail.forwarded`) -
the host and port only, never a path or query, which could carry a secret.

Where no namespace can be made (macOS, Windows, a container whose seccomp profile refuses `unshare`, as
Docker's default does, kernels that forbid user namespaces) a replay does not run: `confinement` raises
`CannotConfine`, saying why. Only where running unconfined was chosen explicitly (`allow_unconfined`, which
the daemon sets from `replay.allow_unconfined`) does the agent run with the recording proxy in its
environment alone, which every well-behaved client honours (curl, wget, pip, npm, git, Python's urllib and
requests, Node with proxy support), while a program that opens its own sockets reaches this machine's
ports, its Unix sockets and the network; the result says so in its warnings.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import errno
import fnmatch
import functools
import hmac
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from skillopt_lib.errors import ExternalToolError
from skillopt_lib.net import is_loopback_host

# The proxy's port inside a namespace: any free port works there, since nothing else listens in it.
INNER_PROXY_PORT = 3128
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
NO_PROXY = "localhost,127.0.0.1,::1"
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x1000, 0x4000, 0x40000
_PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _SIOCSIFADDR, _SIOCSIFNETMASK = 0x8913, 0x8914, 0x8916, 0x891C
_IFF_UP = 0x1
_URL = re.compile(r"\bhttps?://[^\s\"'<>`\\]+", re.IGNORECASE)
_HOME_SCAN_LIMIT = 262_144


@dataclass(frozen=True)
class NetworkPlan:
    """What one confined process may reach: loopback ports relayed to this machine, and the hosts the proxy
    lets through: exact names (with their subdomains) or patterns (`host_matches`)."""

    relay_ports: tuple[int, ...] = ()
    allowed_hosts: tuple[str, ...] = ()

    def allows(self, host: str) -> bool:
        name = host.strip().strip("[]").lower().rstrip(".")
        for pattern in self.allowed_hosts:
            pat = pattern.lower()
            if any(ch in pat for ch in "*?["):
                if host_matches(name, pat):
                    return True
            elif name == pat or name.endswith("." + pat):
                return True
        return False


def host_matches(name: str, pattern: str) -> bool:
    """Whether the host `name` fits `pattern`, label by label: a wildcard stays within one DNS label, so
    `bedrock-runtime.*.amazonaws.com` is a region's endpoint and never `bedrock-runtime.x.s3.amazonaws.com`
    (a bucket anyone can create). Both are compared lower-case, without a trailing dot."""
    labels, wanted = name.split("."), pattern.split(".")
    if len(labels) != len(wanted):
        return False
    return all(fnmatch.fnmatchcase(label, want) for label, want in zip(labels, wanted, strict=True))


def endpoints(env: Mapping[str, str], home: Path | None = None) -> list[tuple[str, int]]:
    """(host, port) of every URL in the agent's environment and in the settings files of its prepared home
    (Codex's `config.toml` providers, Claude Code's `settings.json` env): where its model may be."""
    texts = [v for v in env.values() if "://" in v]
    if home is not None and home.is_dir():
        for path in sorted(home.rglob("*")):
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_size <= _HOME_SCAN_LIMIT:
                    texts.append(path.read_text(encoding="utf-8", errors="ignore"))
            except OSError:
                continue
    out: list[tuple[str, int]] = []
    for text in texts:
        for m in _URL.finditer(text):
            try:
                parts = urlsplit(m.group().rstrip(".,;)]}"))
                host, port = parts.hostname, parts.port
            except ValueError:
                continue
            if host:
                out.append((host, port or (443 if parts.scheme.lower() == "https" else 80)))
    return list(dict.fromkeys(out))


def plan_for(
    env: Mapping[str, str], home: Path | None, tool_hosts: Sequence[str] | None
) -> tuple[NetworkPlan, str | None]:
    """The plan for an agent, and why a namespace would cut it off from its model (None when it would not).

    `tool_hosts`: the tool's model hosts, or None for a tool not known to reach them through `HTTPS_PROXY`:
    such a tool can only be confined when every endpoint it names is on this machine."""
    found = endpoints(env, home)
    ports = tuple(sorted({p for h, p in found if is_loopback_host(h)}))
    remote = sorted({h for h, _ in found if not is_loopback_host(h)})
    if tool_hosts is None:
        if not ports:
            return NetworkPlan(), "this tool is not known to reach its model through HTTPS_PROXY"
        return NetworkPlan(ports, tuple(remote)), None
    return NetworkPlan(ports, tuple(dict.fromkeys([*tool_hosts, *remote]))), None


def launcher() -> list[str]:
    """The command that starts the launcher: this very module (the one speaking the jail's side of the
    handover), by this interpreter in isolated mode, so neither the agent's environment (`PYTHONPATH`)
    nor another installed copy of skillopt decides what runs before the namespace exists."""
    root = str(Path(__file__).resolve().parent.parent)
    code = "import sys; sys.path.insert(0, sys.argv.pop(1)); from skillopt_lib.netjail import main; sys.exit(main())"
    return [sys.executable, "-I", "-c", code, root]


@functools.lru_cache(maxsize=1)
def namespace_unavailable() -> str | None:
    """Why this process cannot give a replay a network namespace of its own (None: it can). Probed once by
    running the launcher on `true`."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces exist only on Linux (this is {sys.platform})"
    true = shutil.which("true") or "/bin/true"
    try:
        proc = subprocess.run(
            [*launcher(), "--probe", "--", true],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the namespace launcher could not run: {exc}"
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["the namespace launcher failed"])[-1]
    return None


# ---------------------------------------------------------------------------------------------- this side


class Jail:
    """The outside of one confined run: it serves the sockets the launcher opened in the namespace (or, with
    `isolate=False`, a recording proxy on this machine's loopback) and records what was refused.

    `wrap(argv)` makes a command run confined, `environ(env)` adds the proxy variables; use as a context
    manager around the run. One jail may serve several commands in turn (each check of a replay)."""

    def __init__(self, plan: NetworkPlan, *, isolate: bool = True, what: str = "") -> None:
        self.plan = plan
        self.isolate = isolate
        self.what = what
        self._attempts: dict[str, None] = {}
        self._forwarded: dict[str, None] = {}
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()
        self._control: socket.socket | None = None
        # The control socket's name in the abstract namespace of this machine's network namespace ("" until
        # started), and the one-time secrets of the launchers `wrap` made that have not connected yet.
        self._name = ""
        self._tokens: set[str] = set()
        self.proxy_port = next(p for p in range(INNER_PROXY_PORT, 65536) if p not in plan.relay_ports)
        self.errors: list[str] = []

    # -- lifecycle
    def __enter__(self) -> Jail:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if self.isolate:
            # An abstract socket belongs to a network namespace: the launcher connects to it before it
            # leaves this one, and nothing inside a jail can reach it (a file in /tmp anyone could).
            self._name = f"skillopt-net-{secrets.token_hex(16)}"
            control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            control.bind(self.control_address)
            control.listen(8)
            self._control = control
            self._spawn(self._serve_launchers, control)
        else:
            proxy = socket.create_server(("127.0.0.1", 0))
            self.proxy_port = proxy.getsockname()[1]
            self._serve(proxy, "proxy", 0)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            socks, self._sockets = self._sockets, []
        for sock in [*socks, *([self._control] if self._control else [])]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        for t in self._threads:
            t.join(timeout=2)

    # -- what a run uses
    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside a namespace of its own (unchanged when not isolating)."""
        if not self.isolate or not self._name:
            return list(argv)
        cmd = [*launcher(), "--control", self._name]
        cmd += ["--token", self._new_token(), "--parent", str(os.getpid())]
        cmd += ["--proxy-port", str(self.proxy_port)]
        for port in self.plan.relay_ports:
            cmd += ["--relay", str(port)]
        return [*cmd, "--", *argv]

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with every proxy variable pointing at the jail's proxy, loopback excepted."""
        out = dict(env)
        url = f"http://127.0.0.1:{self.proxy_port}"
        out.update(dict.fromkeys(PROXY_VARS, url))
        out["NO_PROXY"] = out["no_proxy"] = NO_PROXY
        return out

    @property
    def control_address(self) -> str:
        """Where launchers hand their sockets over: an abstract Unix socket address (leading NUL)."""
        return "\0" + self._name

    def _new_token(self) -> str:
        """A secret for one launcher: its sockets are taken only with it, and only once."""
        token = secrets.token_hex(16)
        with self._lock:
            self._tokens.add(token)
        return token

    def _take_token(self, given: object) -> bool:
        """Whether `given` is a secret `wrap` handed out and no launcher used yet (it is used up now)."""
        if not isinstance(given, str):
            return False
        with self._lock:
            for token in list(self._tokens):
                if hmac.compare_digest(token.encode(), given.encode("utf-8", "replace")):
                    self._tokens.discard(token)
                    return True
        return False

    @property
    def attempts(self) -> list[str]:
        """What was refused, in order, each once: `host:port (how)` or `name (name lookup)`."""
        with self._lock:
            return list(self._attempts)

    @property
    def forwarded(self) -> list[str]:
        """What the proxy let through, in order, each once: `host:port (how)`. Every allowed request is on
        record, so a host a pattern let through by mistake shows up in the result, not nowhere."""
        with self._lock:
            return list(self._forwarded)

    def _record(self, what: str, *, allowed: bool = False) -> None:
        with self._lock:
            book = self._forwarded if allowed else self._attempts
            book.setdefault(what + (f" {self.what}" if self.what else ""), None)

    # -- serving
    def _spawn(self, target: Any, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _serve_launchers(self, control: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = control.accept()
            except OSError:
                return
            try:
                self._adopt(conn)
            except (OSError, ValueError, TypeError, KeyError) as exc:
                self.errors.append(f"the namespace launcher's sockets could not be used: {exc}")
            finally:
                conn.close()

    def _adopt(self, conn: socket.socket) -> None:
        """Take the sockets one launcher opened inside its namespace, then let it run the command. Only a
        launcher `wrap` made (its one-time secret) of this user, and only the roles of the plan: a relay to
        a port the plan names, the proxy on its port, the name server; anything else is refused whole."""
        conn.settimeout(30)
        fds: list[int] = []
        try:
            uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
            msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, 64)
            head = json.loads(msg.decode("utf-8"))
            if uid != os.geteuid() or not isinstance(head, dict) or not self._take_token(head.get("token")):
                raise ValueError(
                    "a connection to the jail's control socket without the launcher's one-time secret "
                    "was refused"
                )
            if head.get("error"):
                self.errors.append(str(head["error"]))
                return
            roles = [(str(kind), int(port)) for kind, port in head["roles"]]
            if len(roles) != len(fds):
                raise ValueError("the launcher's sockets and their roles do not match")
            for kind, port in roles:
                self._check_role(kind, port)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        for fd, (kind, port) in zip(fds, roles, strict=True):
            self._serve(socket.socket(fileno=fd), kind, port)
        conn.sendall(b"ok")

    def _check_role(self, kind: str, port: int) -> None:
        if kind == "relay" and port in self.plan.relay_ports:
            return
        if (kind, port) in (("proxy", self.proxy_port), ("dns", 53)):
            return
        raise ValueError(f"the jail refused a {kind} to port {port}, which its plan does not name")

    def _serve(self, sock: socket.socket, kind: str, port: int) -> None:
        self._keep(sock)
        if kind == "dns":
            self._spawn(self._dns, sock)
        else:
            self._spawn(self._accept, sock, kind, port)

    def _accept(self, sock: socket.socket, kind: str, port: int) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            self._keep(conn)
            if kind == "relay":
                self._spawn(self._relay, conn, sock.family, port)
            else:
                self._spawn(self._proxy, conn)

    def _relay(self, conn: socket.socket, family: int, port: int) -> None:
        host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
        try:
            upstream = socket.create_connection((host, port), timeout=30)
        except OSError:
            with contextlib.suppress(OSError):
                conn.close()
            return
        self._keep(upstream)
        _pump(conn, upstream)

    def _proxy(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(60)
            head = _read_head(conn)
            if head is None:
                conn.close()
                return
            request, rest = head
            method, target, host, port = _parse_request(request)
            how = "https through the proxy" if method == "CONNECT" else f"{method.lower()} through the proxy"
            if not host or not self.plan.allows(host):
                self._record(f"{host or target[:80]}:{port} ({how})")
                body = b"blocked by skillopt: a replay may only reach its model endpoint\n"
                conn.sendall(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                conn.close()
                return
            self._record(f"{host}:{port} ({how})", allowed=True)
            upstream = _open_upstream(host, port)
            self._keep(upstream)
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                upstream.sendall(request + rest)
            conn.settimeout(None)
            _pump(conn, upstream)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                conn.close()

    def _dns(self, sock: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                data, addr = sock.recvfrom(4096)
            except OSError:
                return
            name = _dns_name(data)
            if name is None:
                continue
            if not self.plan.allows(name) and not is_loopback_host(name):
                self._record(f"{name} (name lookup)")
            with contextlib.suppress(OSError):
                sock.sendto(_nxdomain(data), addr)


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides are done."""

    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                dst.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=one_way, args=(b, a), daemon=True)
    t.start()
    one_way(a, b)
    t.join()
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.close()


def _read_head(conn: socket.socket, limit: int = 65536) -> tuple[bytes, bytes] | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        buf += chunk
        if len(buf) > limit:
            raise ValueError("request head too long")
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _parse_request(head: bytes) -> tuple[str, str, str, int]:
    """(method, target, host, port) of a proxy request (`CONNECT host:port` or an absolute URL)."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) < 2:
        raise ValueError("not an HTTP request")
    method, target = parts[0].upper(), parts[1]
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return method, target, host.strip("[]"), int(port or 443)
    url = urlsplit(target)
    return method, target, url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


def _open_upstream(host: str, port: int) -> socket.socket:
    """A connection to an allowed host: through this machine's own proxy when it has one (a corporate
    network), else directly."""
    via = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or ""
    bypass = os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or ""
    skip = any(
        host == b.strip() or host.endswith("." + b.strip().lstrip(".")) for b in bypass.split(",") if b
    )
    if not via or skip:
        return socket.create_connection((host, port), timeout=30)
    up = urlsplit(via if "://" in via else f"http://{via}")
    sock = socket.create_connection((up.hostname or "127.0.0.1", up.port or 3128), timeout=30)
    auth = ""
    if up.username:
        token = base64.b64encode(f"{unquote(up.username)}:{unquote(up.password or '')}".encode()).decode()
        auth = f"Proxy-Authorization: Basic {token}\r\n"
    sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode())
    head = _read_head(sock)
    if head is None or b" 200" not in head[0].split(b"\r\n", 1)[0]:
        sock.close()
        raise OSError(errno.ECONNREFUSED, "the upstream proxy refused the connection")
    return sock


def _dns_name(packet: bytes) -> str | None:
    """The first question's name of a DNS query, or None for anything else."""
    if len(packet) < 12:
        return None
    labels: list[str] = []
    pos = 12
    while pos < len(packet):
        size = packet[pos]
        if size == 0:
            return ".".join(labels).lower() or None
        if size & 0xC0:
            return None
        labels.append(packet[pos + 1 : pos + 1 + size].decode("ascii", "replace"))
        pos += 1 + size
    return None


def _nxdomain(query: bytes) -> bytes:
    """The answer "no such name" to a query: its id and question, no records."""
    ident, flags, qdcount = struct.unpack("!HHH", query[:6])
    rd = flags & 0x0100
    end = 12
    for _ in range(qdcount):
        while end < len(query) and query[end] != 0:
            end += 1 + query[end]
        end += 5
    return struct.pack("!HHHHHH", ident, 0x8180 | rd | 3, qdcount, 0, 0, 0) + query[12:end]


class CannotConfine(ExternalToolError):
    """A replay was to run in a jail and this machine cannot make one: it does not run."""


# Whether replays may run without a jail where none can be made: an explicit choice, off unless the
# program running them (the daemon, from `replay.allow_unconfined`) turns it on.
_unconfined_allowed = False


def allow_unconfined(allowed: bool) -> None:
    """Let replays run with the recording proxy alone where no namespace can be made (or not again)."""
    global _unconfined_allowed
    _unconfined_allowed = bool(allowed)


def unconfined_allowed() -> bool:
    """The choice `allow_unconfined` made for this process (False unless made)."""
    return _unconfined_allowed


UNCONFINED_HINT = (
    "run replays where Linux allows network, mount and process namespaces (root, or unprivileged user "
    "namespaces; in a container, a seccomp profile that allows unshare), or choose to run them without the "
    "jail, knowing they can reach this machine's ports and sockets and the network: "
    "replay.allow_unconfined = true"
)


def refusal(why: str) -> CannotConfine:
    """The error a replay that cannot be jailed fails with: why, and what to do."""
    return CannotConfine(
        f"a replay cannot be jailed on this machine ({why}), so it did not run", hint=UNCONFINED_HINT
    )


def confinement(
    mode: str,
    tool_hosts: Sequence[str] | None,
    env: Mapping[str, str],
    home: Path | None,
    *,
    what: str = "",
    allow_unconfined: bool = False,
) -> tuple[Jail | None, list[str]]:
    """The jail for one agent run under `mode` ("isolated" or "open"), and notes for the result's warnings.

    None and no note for "open". Otherwise a started jail: in namespaces when this machine allows them and
    the agent would still reach its model. Where this machine allows none, `CannotConfine` is raised unless
    `allow_unconfined`; then, and for a tool the namespace would cut off from its model, the jail is a
    recording proxy in its environment, with a note saying why the run was not isolated."""
    if mode == "open":
        return None, []
    plan, unreachable = plan_for(env, home, tool_hosts)
    unavailable = namespace_unavailable()
    if unavailable is not None and not allow_unconfined:
        raise refusal(unavailable)
    why = unreachable or unavailable
    jail = Jail(plan, isolate=why is None, what=what)
    jail.start()
    notes = []
    if unavailable is not None:
        notes.append(
            f"the replay ran unconfined ({unavailable}; replay.allow_unconfined): only programs that honour "
            "HTTPS_PROXY were held to the model endpoint"
        )
    elif why is not None:
        notes.append(
            f"the replay's network was not isolated ({why}): only programs that honour HTTPS_PROXY were "
            "held to the model endpoint"
        )
    return jail, notes


def forwarded_note(forwarded: Iterable[str]) -> str | None:
    """The line a replay's result carries naming what its proxy let through (None when nothing was)."""
    found = list(forwarded)
    if not found:
        return None
    head = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return f"the replay's proxy let through: {head}"


def blocked_note(attempts: Iterable[str]) -> str | None:
    """The warning a replay's result carries when something in it tried to reach another host."""
    found = list(attempts)
    if not found:
        return None
    head = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return f"the replay tried to reach hosts other than its model endpoint, and was refused: {head}"


# ---------------------------------------------------------------------------------------------- the launcher


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    import ctypes

    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare() -> None:
    """Leave this machine's network, mount table and process tree (and, for a user who is not root, its
    user namespace, mapped to the same ids)."""
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWNET | _CLONE_NEWNS | _CLONE_NEWPID | (0 if uid == 0 else _CLONE_NEWUSER)
    _check(_libc().unshare(flags), "unshare")
    if uid != 0:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = [None if v is None else v.encode() for v in (source, target, fstype)]
    _check(_libc().mount(enc[0], enc[1], enc[2], flags, None), f"mount {target}")


def _die_with_parent(parent: int) -> None:
    """Be killed when the process that started the launcher dies (a night killed with `kill -9`): the
    namespace's first process then dies with this one, and the kernel ends everything in the namespace.
    The parent is the thread that started the launcher; the sandbox's threads wait for it to end."""
    _check(_libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        raise OSError(errno.ESRCH, "the process that started the replay is gone") from None
    except PermissionError:
        pass


def _host_unix_sockets() -> list[str]:
    """The paths of the Unix sockets listening in this machine's network namespace (`/proc/net/unix`,
    read before leaving it): a Docker or Podman socket, an ssh or gpg agent, a session bus."""
    try:
        lines = Path("/proc/net/unix").read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split(None, 7)
        if len(parts) == 8 and parts[7].startswith("/"):
            found.append(parts[7])
    return list(dict.fromkeys(found))


def _hide(paths: Iterable[str]) -> None:
    """Cover each socket file with /dev/null in the namespace's mount table: a connection there is refused.
    Only sockets: a path another mount namespace bound may name an ordinary file in this one."""
    for path in paths:
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                _mount("/dev/null", path, None, _MS_BIND)


def _ifreq_flags(sock: socket.socket, name: str) -> None:
    import fcntl

    ifr = struct.pack("16sH14s", name.encode(), 0, b"")
    flags = struct.unpack("16sH", fcntl.ioctl(sock, _SIOCGIFFLAGS, ifr)[:18])[1]
    fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14s", name.encode(), flags | _IFF_UP, b""))


def _add_loopback_address(sock: socket.socket, index: int, address: str) -> None:
    import fcntl

    name = f"lo:{index}".encode()
    packed = socket.inet_aton(address)
    fcntl.ioctl(sock, _SIOCSIFADDR, struct.pack("16sHH4s8s", name, socket.AF_INET, 0, packed, b""))
    mask = socket.inet_aton("255.255.255.255")
    fcntl.ioctl(sock, _SIOCSIFNETMASK, struct.pack("16sHH4s8s", name, socket.AF_INET, 0, mask, b""))
    _ifreq_flags(sock, f"lo:{index}")


def _nameservers() -> list[str]:
    try:
        text = Path("/etc/resolv.conf").read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return ["127.0.0.53"]
    found = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            with contextlib.suppress(ValueError):
                if ipaddress.ip_address(parts[1]).version == 4:
                    found.append(parts[1])
    return found or ["127.0.0.53"]


def _listen(family: int, host: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


def _enter(relays: Sequence[int], proxy_port: int) -> tuple[list[socket.socket], list[tuple[str, int]]]:
    """Into the new namespaces: a private mount table with this machine's Unix sockets covered, loopback up
    with the name servers' addresses on it, and the sockets to hand over."""
    hidden = _host_unix_sockets()
    _unshare()
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _hide(hidden)
    ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _ifreq_flags(ctl, "lo")
    socks: list[socket.socket] = []
    roles: list[tuple[str, int]] = []
    for port in relays:
        socks.append(_listen(socket.AF_INET, "127.0.0.1", port))
        roles.append(("relay", port))
        with contextlib.suppress(OSError):
            socks.append(_listen(socket.AF_INET6, "::1", port))
            roles.append(("relay", port))
    socks.append(_listen(socket.AF_INET, "127.0.0.1", proxy_port))
    roles.append(("proxy", proxy_port))
    for index, address in enumerate(_nameservers()):
        with contextlib.suppress(OSError):
            if not address.startswith("127."):
                _add_loopback_address(ctl, index, address)
            dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            dns.bind((address, 53))
            socks.append(dns)
            roles.append(("dns", 53))
    ctl.close()
    return socks, roles


_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def _forward_to(pid: int) -> None:
    def forward(sig: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)

    for sig in _FORWARDED:
        signal.signal(sig, forward)


def _init(command: Sequence[str], report: int) -> None:
    """The first process of the new process namespace: its own /proc (so no process of this machine is
    in sight, nor its files through /proc/PID/root), the command as its child, orphans reaped, signals
    passed on. When the command ends it writes the command's wait status to `report` and exits; the kernel
    then ends every process left in the namespace (a server started in the background, a daemonised
    shell)."""
    _check(_libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    child = os.fork()
    if child == 0:
        os.close(report)
        for sig in _FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(command[0], list(command))
        except OSError as exc:
            print(f"skillopt netjail: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        os._exit(127)
    _forward_to(child)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(127)
        if pid == child:
            os.write(report, struct.pack("i", status))
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _run_in_namespace(command: Sequence[str]) -> int:
    """Start the namespace's first process (`_init`) and wait for it; end as the command ended (its exit
    code, or killed by the same signal), so the sandbox reads the command's outcome."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(read_end)
        try:
            _init(command, write_end)
        except BaseException as exc:  # noqa: BLE001 - a child of fork must never return into the launcher
            print(f"skillopt netjail: the namespace could not start: {exc}", file=sys.stderr)
        os._exit(126)
    os.close(write_end)
    _forward_to(first)
    _pid, status = os.waitpid(first, 0)
    data = os.read(read_end, 4)
    if len(data) == 4:
        status = struct.unpack("i", data)[0]
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def _send(ctl: socket.socket, head: dict[str, Any], fds: Sequence[int] = ()) -> None:
    socket.send_fds(ctl, [json.dumps(head).encode()], list(fds))


def main(argv: Sequence[str] | None = None) -> int:
    """The launcher: connect to the jail's control socket, enter the namespaces, hand the sockets over,
    then run the command as the child of the namespace's first process."""
    given = list(sys.argv[1:] if argv is None else argv)
    if "--" not in given or given.index("--") == len(given) - 1:
        print(
            "skillopt netjail: usage: python -m skillopt_lib.netjail [options] -- COMMAND...", file=sys.stderr
        )
        return 2
    cut = given.index("--")
    parser = argparse.ArgumentParser(prog="python -m skillopt_lib.netjail", add_help=False)
    parser.add_argument("--control", default="")
    parser.add_argument("--token", default="")
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--relay", type=int, action="append", default=[])
    parser.add_argument("--proxy-port", type=int, default=INNER_PROXY_PORT)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(given[:cut])
    command = given[cut + 1 :]
    ctl = None
    try:
        if args.parent:
            _die_with_parent(args.parent)
        if args.control:
            # Connected from this machine's network namespace: the socket cannot be reached from inside.
            ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ctl.settimeout(30)
            ctl.connect("\0" + args.control)
        socks, roles = _enter(args.relay, args.proxy_port)
    except OSError as exc:
        message = f"cannot make a network namespace here: {exc.strerror or exc}"
        if ctl is not None:
            with contextlib.suppress(OSError):
                _send(ctl, {"error": message, "token": args.token})
        print(f"skillopt netjail: {message}", file=sys.stderr)
        return 126
    if ctl is not None:
        _send(ctl, {"roles": roles, "token": args.token}, [s.fileno() for s in socks])
        if ctl.recv(16) != b"ok":
            print("skillopt netjail: the sandbox did not take the namespace's sockets", file=sys.stderr)
            return 126
        ctl.close()
    for sock in socks:
        sock.close()
    return _run_in_namespace(command)


if __name__ == "__main__":
    sys.exit(main())
