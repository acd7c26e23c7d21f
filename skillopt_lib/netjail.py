"""Replays that cannot phone home: the agent reaches its model endpoint and nothing else.

A replay runs a candidate skill, and a candidate can carry an instruction planted in the text the night
learned from ("run `curl … | sh`", "post the environment to …"). The candidate screen (`skillopt_lib.screen`)
rejects what it recognises; this module makes sure that whatever it does not recognise cannot act on the
network during training either, and that the attempt is recorded in the replay's result.

On Linux, where the kernel lets this process create a network namespace (root, or any user where
unprivileged user namespaces are allowed), each replay's agent and each check command runs in a namespace
of its own with only a loopback interface. Inside it, a small launcher (`python -m skillopt_lib.netjail`,
before it becomes the agent) opens:

- the model endpoint's loopback ports (a local model server, the scripted test server), whose connections
  this process relays to the same port on this machine;
- an HTTP proxy port (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` point at it) that lets through only the model
  hosts of the agent's tool (`agents.TOOLS[...].model_hosts`) and the hosts of the endpoints its settings
  name, and refuses the rest with a 403;
- a name server on the addresses of `/etc/resolv.conf`, which answers every question "no such name".

It hands those sockets to this process (over a Unix socket, file descriptors passed with SCM_RIGHTS) and
then executes the agent, so the agent is the process the sandbox started: its process group, time-outs and
output handling are unchanged. Every host refused by the proxy and every name looked up is recorded
(`Jail.attempts`) - the host and port only, never a path or query, which could carry a secret.

Where no namespace can be made (macOS, Windows, containers without user namespaces, kernels that forbid
them) the agent still gets the recording proxy through its environment, which every well-behaved client
honours (curl, wget, pip, npm, git, Python's urllib and requests, Node with proxy support), but a program
that opens its own sockets is not stopped there; the result says so in its warnings.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import errno
import fnmatch
import functools
import ipaddress
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from skillopt_lib.net import is_loopback_host

# The proxy's port inside a namespace: any free port works there, since nothing else listens in it.
INNER_PROXY_PORT = 3128
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
NO_PROXY = "localhost,127.0.0.1,::1"
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
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


@functools.lru_cache(maxsize=1)
def namespace_unavailable() -> str | None:
    """Why this process cannot give a replay a network namespace of its own (None: it can). Probed once by
    running the launcher on `true`."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces exist only on Linux (this is {sys.platform})"
    true = shutil.which("true") or "/bin/true"
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "skillopt_lib.netjail", "--probe", "--", true],
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
        self._dir: str | None = None
        self._control: socket.socket | None = None
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
            self._dir = tempfile.mkdtemp(prefix="skillopt-net-")
            path = os.path.join(self._dir, "s")
            control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            control.bind(path)
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
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- what a run uses
    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside a namespace of its own (unchanged when not isolating)."""
        if not self.isolate or self._dir is None:
            return list(argv)
        cmd = [sys.executable, "-m", "skillopt_lib.netjail", "--socket", os.path.join(self._dir, "s")]
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
            except (OSError, ValueError) as exc:
                self.errors.append(f"the namespace launcher's sockets could not be used: {exc}")
            finally:
                conn.close()

    def _adopt(self, conn: socket.socket) -> None:
        """Take the sockets one launcher opened inside its namespace, then let it run the command."""
        conn.settimeout(30)
        msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, 64)
        head = json.loads(msg.decode("utf-8"))
        if head.get("error"):
            self.errors.append(str(head["error"]))
            for fd in fds:
                os.close(fd)
            return
        for fd, (kind, port) in zip(fds, head["roles"], strict=True):
            sock = socket.socket(fileno=fd)
            self._serve(sock, kind, int(port))
        conn.sendall(b"ok")

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


def confinement(
    mode: str, tool_hosts: Sequence[str] | None, env: Mapping[str, str], home: Path | None, *, what: str = ""
) -> tuple[Jail | None, list[str]]:
    """The jail for one agent run under `mode` ("isolated" or "open"), and notes for the result's warnings.

    None and no note for "open". Otherwise a started jail: in a namespace when this machine allows one and
    the agent would still reach its model, else a recording proxy in its environment, with a note saying
    why the network was not isolated."""
    if mode == "open":
        return None, []
    plan, unreachable = plan_for(env, home, tool_hosts)
    why = unreachable or namespace_unavailable()
    jail = Jail(plan, isolate=why is None, what=what)
    jail.start()
    notes = []
    if why is not None:
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


def _unshare() -> None:
    import ctypes

    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWNET | (0 if uid == 0 else _CLONE_NEWUSER)
    if _libc().unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    if uid != 0:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


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
    """Inside the new namespace: loopback up, the name servers' addresses on it, and the sockets."""
    _unshare()
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


def main(argv: Sequence[str] | None = None) -> int:
    """The launcher: enter a namespace, hand its sockets over, become the command."""
    given = list(sys.argv[1:] if argv is None else argv)
    if "--" not in given or given.index("--") == len(given) - 1:
        print(
            "skillopt netjail: usage: python -m skillopt_lib.netjail [options] -- COMMAND...", file=sys.stderr
        )
        return 2
    cut = given.index("--")
    parser = argparse.ArgumentParser(prog="python -m skillopt_lib.netjail", add_help=False)
    parser.add_argument("--socket")
    parser.add_argument("--relay", type=int, action="append", default=[])
    parser.add_argument("--proxy-port", type=int, default=INNER_PROXY_PORT)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(given[:cut])
    command = given[cut + 1 :]
    try:
        socks, roles = _enter(args.relay, args.proxy_port)
    except OSError as exc:
        message = f"cannot make a network namespace here: {exc.strerror or exc}"
        if args.socket:
            with contextlib.suppress(OSError):
                ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                ctl.connect(args.socket)
                ctl.sendall(json.dumps({"error": message}).encode())
        print(f"skillopt netjail: {message}", file=sys.stderr)
        return 126
    if args.socket:
        ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ctl.connect(args.socket)
        socket.send_fds(ctl, [json.dumps({"roles": roles}).encode()], [s.fileno() for s in socks])
        ctl.settimeout(30)
        if ctl.recv(16) != b"ok":
            print("skillopt netjail: the sandbox did not take the namespace's sockets", file=sys.stderr)
            return 126
        ctl.close()
    for sock in socks:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"skillopt netjail: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main())
