"""Which hosts a text names, and whether one of them is a host the project already uses.

The candidate screen asks both of every line a candidate adds (`skillopt_lib.screen`), and the project's
own hosts are collected with the same reader (`skillopt_lib.project_hosts`), so a host is spelled the same
way on both sides: lower case, without a trailing dot or a leading `www.`.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from skillopt_lib.net import is_loopback_host

_URL_HOST = re.compile(
    r"\b(?:https?|ftps?|wss?|sftp|ssh|git|rsync|s3|gs)://(?:[^@/\s'\"`]+@)?\[?([A-Za-z0-9.\-_:]+?)\]?(?::\d+)?(?=[/\s'\"`)>\]?#,;|。，、；：！？）」』】]|$)"
)
_SCP_HOST = re.compile(r"\b[\w.-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):")
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
_CMD_HOST = re.compile(
    r"\b(?:nc|ncat|netcat|telnet|ssh|sftp|ftp|dig|nslookup|host|ping|socat\s+\S+\s+tcp:?)\s+(?:-\S+\s+)*"
    r"(?:[\w.-]+@)?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"
)
_DEV_TCP = re.compile(r"/dev/(?:tcp|udp)/([A-Za-z0-9.-]+)/")
_TLDS = (
    "com|net|org|io|dev|app|co|ai|xyz|ru|cn|info|biz|site|online|top|tk|cc|us|uk|de|fr|es|it|pt|jp|br|"
    "cloud|tech|link|click|pw|su|ws|gg"
)
_BARE_HOST = re.compile(
    rf"(?:\b(?:to|at|from|via|on|into|endpoint|server|host|webhook|domain|à|an|nach|auf|a|para|per|verso|到|に)\s+"
    rf"[`'\"]?)([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)*\.(?:{_TLDS}))\b",
    re.IGNORECASE,
)


def clean_host(host: str) -> str:
    host = host.strip().strip(".").lower()
    return host[4:] if host.startswith("www.") else host


def hosts_in(text: str) -> set[str]:
    """Every host a text names: in URLs, `user@host:` paths, network commands' arguments, `/dev/tcp/`,
    IPv4 addresses, and bare domains after "to", "at", "via" and the like."""
    found: set[str] = set()
    for pattern in (_URL_HOST, _SCP_HOST, _CMD_HOST, _DEV_TCP, _BARE_HOST):
        found.update(clean_host(m.group(1)) for m in pattern.finditer(text))
    found.update(m.group(1) for m in _IPV4.finditer(text) if all(int(p) < 256 for p in m.group(1).split(".")))
    return {h for h in found if h and ("." in h or ":" in h or h == "localhost")}


def known_host(host: str, repo_hosts: Collection[str]) -> bool:
    """Whether the repository already talks to `host`: this machine, a host it names, or a subdomain of one."""
    host = clean_host(host)
    if is_loopback_host(host) or host in {"0.0.0.0", "::"}:
        return True
    for known in repo_hosts:
        k = clean_host(known)
        if host == k or (k and host.endswith("." + k)):
            return True
    return False


# Package-manager settings that list hosts without a scheme: `--trusted-host pypi.example`,
# `GOPRIVATE=*.corp.example,git.example`, `GONOSUMDB=…`.
_HOST_LIST = re.compile(
    r"\b(?:trusted[-_]host|GOPRIVATE|GONOSUMDB|GONOSUMCHECK|GOINSECURE|GONOPROXY|PIP_TRUSTED_HOST)"
    r"\s*[=:]?\s*[\"'`]?([^\s\"'`#]+)",
    re.IGNORECASE,
)
_BARE_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)+(?::\d+)?$", re.IGNORECASE)


def listed_hosts(text: str) -> set[str]:
    """The hosts a package-manager setting lists without a scheme (`trusted-host`, `GOPRIVATE`,
    `GONOSUMDB`, `GOINSECURE`, …), wildcards dropped (`*.corp.example` is `corp.example`)."""
    found: set[str] = set()
    for m in _HOST_LIST.finditer(text):
        for item in m.group(1).split(","):
            name = item.strip().lstrip("*.").split("/")[0]
            if _BARE_NAME.match(name):
                found.add(clean_host(name.split(":")[0]))
    return found
