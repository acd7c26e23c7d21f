"""Prompt caching as the Anthropic Messages and OpenAI (Chat Completions, Responses) APIs do it.

Why it exists: the real agent CLIs replayed against the scripted model server report the usage the server
sends back, and a night's cost figures are computed from it. Claude Code sends an ~18k-token system prompt
and tool list with every request and the real API serves that repeated prefix from its cache at a tenth of
the input price; Codex's repeated prefix is served from OpenAI's automatic cache. A server that never
reports cache reads makes every replay look several times dearer than it is. This module decides, request
by request, how many prompt tokens the provider would have read from its cache and written to it.

Provider rules modelled (from the providers' prompt-caching guides):

Anthropic
  * The prompt is rendered tools → system → messages, one *block* per tool, system block and message
    content block. A block carrying ``cache_control`` is a *breakpoint* (at most 4 per request, a 400
    otherwise); a top-level ``cache_control`` (automatic caching) marks the last block.
  * A prefix is written to the cache at each breakpoint that is not already cached, once the prefix is at
    least the model's minimum length (:data:`ANTHROPIC_MIN_TOKENS`); shorter prompts are silently not
    cached. Entries live 5 minutes, or an hour with ``"ttl": "1h"``, and every hit refreshes them.
  * A request reads the longest cached prefix ending at one of its breakpoints or at one of the
    :data:`ANTHROPIC_LOOKBACK_BLOCKS` block boundaries before each, so a conversation whose newest turn
    carries the breakpoint still reads the turns before it. Moving a marker does not change a prefix: the
    cache key is the content, not where ``cache_control`` sits.
  * Usage: ``cache_read_input_tokens`` = the hit, ``cache_creation_input_tokens`` = the rest of the prompt
    up to the last breakpoint, ``input_tokens`` = what follows the last breakpoint.

OpenAI
  * Automatic for prompts of at least 1024 tokens: the longest prefix seen recently is served from cache,
    counted in steps of 128 tokens (1024, 1152, ...). ``cached_tokens`` is part of the prompt's token count.
  * Prompt order: Responses ``instructions``, then ``tools``, then ``input``; Chat ``tools``, then
    ``messages`` (the instructions and tool definitions precede the conversation in what the model reads,
    whatever the order of the JSON keys).
  * In-memory retention: cleared after 5 minutes without use (the guides say 5 to 10) and at the latest an
    hour after it was written; ``prompt_cache_retention: "24h"`` keeps a prefix for a day.
  * Requests are routed by prefix and ``prompt_cache_key``, so a different key is treated as a miss.

Both: the cache is per model and per credential; the clock is injectable so tests check expiry without
sleeping; memory is bounded (least recently used entries go first); calls are thread safe. Token counts
use the server's own estimate (:mod:`skillopt_lib.testing.tokens`), so cached figures never exceed the
prompt they belong to.

Not modelled: tokenisation (prefixes match on text), one-hour breakpoints having to come first, thinking blocks
being dropped from earlier turns, images, changes to ``tool_choice`` or thinking settings invalidating the
message cache, and cache writes for OpenAI (it reports none).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from skillopt_lib.testing.script import collect_strings
from skillopt_lib.testing.tokens import CHARS_PER_TOKEN, tokens_in_chars

__all__ = [
    "ANTHROPIC_LOOKBACK_BLOCKS",
    "ANTHROPIC_MAX_BREAKPOINTS",
    "ANTHROPIC_MIN_TOKENS",
    "ANTHROPIC_TTL_S",
    "OPENAI_MIN_TOKENS",
    "OPENAI_STEP_TOKENS",
    "CacheRequestError",
    "CacheUsage",
    "PromptCache",
    "anthropic_min_tokens",
]

Clock = Callable[[], float]

ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_LOOKBACK_BLOCKS = 20
ANTHROPIC_TTL_S = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_DEFAULT_MIN_TOKENS = 1024
# Minimum cacheable prefix per model family (longest matching name prefix wins; others: 1024).
ANTHROPIC_MIN_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)

OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128
OPENAI_IDLE_S = 300.0
OPENAI_MAX_AGE_S = 3600.0
OPENAI_EXTENDED_S = 24 * 3600.0

DEFAULT_CAPACITY = 100_000  # cached prefixes kept at most (an OpenAI prompt holds one per 128 tokens)


class CacheRequestError(ValueError):
    """A request the provider refuses for its cache markers (answered with a 400)."""


@dataclass(frozen=True)
class CacheUsage:
    """Prompt tokens of one request read from the cache and written to it (``write_1h`` of them for an hour)."""

    read: int = 0
    write: int = 0
    write_1h: int = 0

    @property
    def write_5m(self) -> int:
        return self.write - self.write_1h


def anthropic_min_tokens(model: str) -> int:
    """The shortest prefix ``model`` caches, in tokens."""
    best, length = ANTHROPIC_DEFAULT_MIN_TOKENS, -1
    for prefix, tokens in ANTHROPIC_MIN_TOKENS:
        if model.startswith(prefix) and len(prefix) > length:
            best, length = tokens, len(prefix)
    return best


@dataclass
class _Entry:
    expires: float
    ttl: float
    deadline: float  # never kept past this, however often it is hit


class _Entries:
    """Cached prefixes by key, expiring, at most ``capacity`` of them (least recently used go first)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[bytes, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def alive(self, key: bytes, now: float) -> _Entry | None:
        entry = self._items.get(key)
        if entry is None:
            return None
        if entry.expires <= now:
            del self._items[key]
            return None
        return entry

    def refresh(self, key: bytes, entry: _Entry, now: float, ttl: float | None = None) -> None:
        entry.ttl = max(entry.ttl, ttl or 0.0)
        entry.expires = min(now + entry.ttl, entry.deadline)
        self._items.move_to_end(key)

    def put(self, key: bytes, now: float, ttl: float, max_age: float | None = None) -> None:
        deadline = now + (max_age if max_age is not None else float("inf"))
        self._items[key] = _Entry(expires=min(now + ttl, deadline), ttl=ttl, deadline=deadline)
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)


@dataclass(frozen=True)
class _Block:
    identity: bytes  # what the block is, without its cache marker
    chars: int  # its share of the request's text, as the token estimate counts it
    ttl: str | None  # "5m" or "1h" on a breakpoint, else None


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _chars(value: Any) -> int:
    """Characters ``value`` adds to the request text (its strings, each with a separator)."""
    return sum(len(s) + 1 for s in collect_strings(value))


def _block(where: str, raw: Any, extra_chars: int = 0, marker: Any = None) -> _Block:
    if isinstance(raw, Mapping):
        marker = raw.get("cache_control") or marker
        clean: Any = {k: v for k, v in raw.items() if k != "cache_control"}
    else:
        clean = {"type": "text", "text": raw} if isinstance(raw, str) else raw
    identity = (where + json.dumps(clean, ensure_ascii=False, sort_keys=True)).encode("utf-8")
    ttl = None
    if isinstance(marker, Mapping):
        ttl = "1h" if marker.get("ttl") == "1h" else "5m"
    return _Block(identity, _chars(clean if isinstance(raw, Mapping) else raw) + extra_chars, ttl)


def _anthropic_blocks(body: Mapping[str, Any]) -> list[_Block]:
    """The request's blocks in render order: tools, then system, then messages."""
    blocks = [_block("tool:", t) for t in body.get("tools") or []]
    system = body.get("system")
    for s in system if isinstance(system, list) else ([system] if system else []):
        blocks.append(_block("system:", s))
    for m in body.get("messages") or []:
        if not isinstance(m, Mapping):
            continue
        role = str(m.get("role") or "")
        content = m.get("content")
        parts = content if isinstance(content, list) else [content if content is not None else ""]
        for i, part in enumerate(parts):
            # A new message starts with its role; its later blocks continue it.
            blocks.append(_block(f"{role}>" if i == 0 else f"{role}+", part, len(role) + 1 if i == 0 else 0))
    automatic = body.get("cache_control")
    if isinstance(automatic, Mapping) and blocks and blocks[-1].ttl is None:
        last = blocks[-1]
        blocks[-1] = _Block(last.identity, last.chars, "1h" if automatic.get("ttl") == "1h" else "5m")
    return blocks


def _openai_prompt(api: str, body: Mapping[str, Any]) -> str:
    """The prompt's text in the order the model reads it."""
    keys = ("instructions", "tools", "input") if api == "responses" else ("tools", "functions", "messages")
    return "\n".join(s for k in keys for s in collect_strings(body.get(k)))


class PromptCache:
    """Both providers' prompt caches for one server. ``clock`` returns seconds (monotonic by default)."""

    def __init__(self, clock: Clock | None = None, capacity: int = DEFAULT_CAPACITY) -> None:
        self.clock: Clock = clock or time.monotonic
        self._entries = _Entries(capacity)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Forget every cached prefix (a cold cache, as after a long pause)."""
        with self._lock:
            self._entries = _Entries(self._entries.capacity)

    # ------------------------------------------------------------------------------------ Anthropic
    def anthropic(self, body: Mapping[str, Any], scope: str = "") -> CacheUsage:
        """Read and write the cache for one Messages request; raises :class:`CacheRequestError` for a 400."""
        blocks = _anthropic_blocks(body)
        points = [i for i, b in enumerate(blocks) if b.ttl is not None]
        if len(points) > ANTHROPIC_MAX_BREAKPOINTS:
            raise CacheRequestError(
                f"A maximum of {ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(points)}."
            )
        if not points:
            return CacheUsage()
        model = str(body.get("model") or "")
        keys, tokens = self._chain(f"anthropic\0{scope}\0{model}", blocks)
        last = points[-1]
        minimum = anthropic_min_tokens(model)
        if tokens[last] < minimum:
            return CacheUsage()
        with self._lock:
            now = self.clock()
            hit = -1
            for p in points:
                for j in range(p, max(hit, p - ANTHROPIC_LOOKBACK_BLOCKS - 1), -1):
                    if self._entries.alive(keys[j], now) is not None:
                        hit = j
                        break
            read = tokens[hit] if hit >= 0 else 0
            # Every cached prefix this request used is refreshed: the hit and the breakpoints within it.
            for j in {hit, *(p for p in points if p <= hit)} - {-1}:
                entry = self._entries.alive(keys[j], now)
                if entry is not None:
                    ttl = blocks[j].ttl
                    self._entries.refresh(keys[j], entry, now, ANTHROPIC_TTL_S[ttl] if ttl else None)
            write_1h, before = 0, read
            for p in points:
                if p <= hit:
                    continue
                ttl = blocks[p].ttl or "5m"
                if tokens[p] >= minimum:
                    self._entries.put(keys[p], now, ANTHROPIC_TTL_S[ttl])
                if ttl == "1h":
                    write_1h += tokens[p] - before
                before = tokens[p]
        return CacheUsage(read=read, write=tokens[last] - read, write_1h=write_1h)

    @staticmethod
    def _chain(scope: str, blocks: list[_Block]) -> tuple[list[bytes], list[int]]:
        """For each block boundary: the key of the prefix ending there, and its length in tokens."""
        keys: list[bytes] = []
        tokens: list[int] = []
        h, chars = _digest(scope.encode("utf-8")), 0
        for b in blocks:
            h = _digest(h + b.identity)
            chars += b.chars
            keys.append(h)
            tokens.append(tokens_in_chars(chars))
        return keys, tokens

    # ------------------------------------------------------------------------------------ OpenAI
    def openai(self, api: str, body: Mapping[str, Any], scope: str = "") -> CacheUsage:
        """Read and write the automatic cache for one Chat Completions or Responses request."""
        text = _openai_prompt(api, body)
        if tokens_in_chars(len(text)) < OPENAI_MIN_TOKENS:
            return CacheUsage()
        extended = body.get("prompt_cache_retention") == "24h"
        idle, max_age = (
            (OPENAI_EXTENDED_S, OPENAI_EXTENDED_S) if extended else (OPENAI_IDLE_S, OPENAI_MAX_AGE_S)
        )
        step = OPENAI_STEP_TOKENS * CHARS_PER_TOKEN
        route = f"openai\0{scope}\0{body.get('model') or ''}\0{body.get('prompt_cache_key') or ''}"
        h = _digest(route.encode("utf-8"))
        keys = []
        for start in range(0, len(text) - step + 1, step):
            h = _digest(h + text[start : start + step].encode("utf-8"))
            keys.append(h)
        with self._lock:
            now = self.clock()
            matched = 0
            for key in keys:
                entry = self._entries.alive(key, now)
                if entry is None:
                    break
                self._entries.refresh(key, entry, now)
                matched += 1
            for key in keys[matched:]:
                self._entries.put(key, now, idle, max_age)
        cached = matched * OPENAI_STEP_TOKENS
        return CacheUsage(read=cached if cached >= OPENAI_MIN_TOKENS else 0)
