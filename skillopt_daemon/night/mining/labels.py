"""Labelling requests with the model the user already has, cached forever by content hash.

Mining asks the configured chat backend (any optimizer backend, `claude-code-chat` and `codex-chat`
included) to label many requests per call: kind, a canonical English intent, the kind of work, the rules a
correction states, and whether the request is a one-off. The prompt is `prompts/label_requests.md`; its
version is part of every cache key, so changing the prompt relabels. Only stored text is sent, and stored
text was redacted at ingest.

A reply that is not JSON, that labels an id it was not given, or that never comes (timeout, refused
call) gets one retry; then those requests fall back to the lexical path for this night and are not cached,
so the next night asks again. Nothing is lost either way.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any, Protocol

import sqlite_utils

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.ingest.kinds import Kind
from skillopt_lib.backends.base import ChatMessage, ChatResponse
from skillopt_lib.errors import SkillOptError

PROMPT_NAME = "label_requests.md"
PROMPT_VERSION = "label_requests-v1"
MAX_TEXT_CHARS = 1200  # longer requests are cut: the gist is at the start, and tokens cost money
_KINDS = {k.value for k in Kind}


class Chat(Protocol):
    """A chat backend (`skillopt_lib.backends.base.ChatBackend`), usually wrapped to count the night's budget.

    `complete(messages, system=..., json_mode=...)` returns the reply; it raises a `SkillOptError` (a
    `BackendError` when the model cannot be reached or times out, the night's budget error when a cap is
    reached) and never returns a partial reply. Called from one thread.
    """

    name: str
    model: str

    def complete(
        self, messages: list[ChatMessage], *, system: str | None = None, json_mode: bool = False
    ) -> ChatResponse: ...


class Budget(Protocol):
    """The night's caps. `check()` raises a `SkillOptError` once a cap is reached and returns None otherwise."""

    def check(self) -> None: ...


@dataclass(frozen=True)
class Request:
    """One user message to label, with the request it followed (context for follow-ups and corrections)."""

    text: str
    previous: str = ""

    @property
    def hash(self) -> str:
        payload = f"{PROMPT_VERSION}\x00{self.text}\x00{self.previous}"
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class Label:
    kind: str
    intent: str = ""
    work: str = ""
    rules: list[str] = field(default_factory=list)
    one_off: bool = False
    source: str = "model"  # model | cache


@dataclass
class LabelReport:
    """What labelling did tonight; shown in the night's report and by `skillopt tasks mine`."""

    requests: int = 0
    cached: int = 0
    labelled: int = 0
    fallback: int = 0
    model_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LabelReplyError(ValueError):
    """The model's reply cannot be used: not JSON, or labels for ids it was not given."""


def prompt_text() -> str:
    return (
        resources.files("skillopt_daemon.night").joinpath("prompts", PROMPT_NAME).read_text(encoding="utf-8")
    )


def cached_labels(db: sqlite_utils.Database, hashes: Sequence[str]) -> dict[str, Label]:
    out: dict[str, Label] = {}
    if "request_labels" not in db.table_names():
        return out
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.query(f"SELECT * FROM request_labels WHERE hash IN ({marks})", chunk):
            out[row["hash"]] = Label(
                kind=row["kind"],
                intent=row["intent"] or "",
                work=row["work"] or "",
                rules=json.loads(row["rules_json"] or "[]"),
                one_off=bool(row["one_off"]),
                source="cache",
            )
    return out


def known_work(db: sqlite_utils.Database, limit: int = 40) -> list[str]:
    """The kinds of work named so far, most frequent first, for the model to reuse."""
    if "request_labels" not in db.table_names():
        return []
    rows = db.query(
        "SELECT work, count(*) AS n FROM request_labels WHERE work != '' GROUP BY work ORDER BY n DESC LIMIT ?",
        [limit],
    )
    return [r["work"] for r in rows]


def parse_reply(text: str, ids: Sequence[str]) -> dict[str, Label]:
    """The labels in a reply, by id; raises LabelReplyError for anything that cannot be trusted."""
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise LabelReplyError(f"the reply is not JSON ({exc})") from None
    items = data.get("labels") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise LabelReplyError("the reply has no list of labels")
    wanted = set(ids)
    out: dict[str, Label] = {}
    for item in items:
        if not isinstance(item, dict):
            raise LabelReplyError(f"a label is not an object: {item!r}"[:200])
        rid = str(item.get("id", ""))
        if rid not in wanted:
            raise LabelReplyError(f"the reply labels a request that does not exist ({rid!r})")
        kind = str(item.get("kind", "")).strip().lower()
        if kind not in _KINDS:
            raise LabelReplyError(f"unknown kind {kind!r} for {rid}")
        rules = item.get("rules") or []
        out[rid] = Label(
            kind=kind,
            intent=str(item.get("intent") or "").strip()[:200],
            work=" ".join(str(item.get("work") or "").lower().split())[:80],
            rules=[str(r).strip() for r in rules if str(r).strip()] if isinstance(rules, list) else [],
            one_off=bool(item.get("one_off", False)),
        )
    return out


class Labeller:
    """Labels requests in batches through `chat`, reading and filling the store's cache."""

    def __init__(
        self, db: sqlite_utils.Database, chat: Chat, *, budget: Budget | None = None, batch: int = 40
    ) -> None:
        self.db = db
        self.chat = chat
        self.budget = budget
        self.batch = batch
        self.report = LabelReport()
        self._system = prompt_text()
        self._work = known_work(db)

    def label(self, requests: Sequence[Request]) -> dict[str, Label]:
        """Labels by request hash; requests missing from the result take the lexical path."""
        unique = {r.hash: r for r in requests}
        self.report.requests = len(unique)
        out = cached_labels(self.db, list(unique))
        self.report.cached = len(out)
        todo = [r for h, r in unique.items() if h not in out]
        for start in range(0, len(todo), self.batch):
            chunk = todo[start : start + self.batch]
            if not self._budget_left(len(todo) - start):
                break
            got = self._label_batch(chunk)
            out.update(got)
        self.report.fallback = len(unique) - len(out)
        return out

    def _budget_left(self, remaining: int) -> bool:
        if self.budget is None:
            return True
        try:
            self.budget.check()
        except SkillOptError as exc:
            self.report.problems.append(f"{exc.message}: {remaining} requests labelled without the model")
            return False
        return True

    def _label_batch(self, chunk: Sequence[Request]) -> dict[str, Label]:
        ids = [f"r{i}" for i in range(len(chunk))]
        payload = {
            "known_work": self._work,
            "requests": [
                {"id": rid, "text": r.text[:MAX_TEXT_CHARS], "previous": r.previous[:MAX_TEXT_CHARS] or None}
                for rid, r in zip(ids, chunk, strict=True)
            ],
        }
        message = ChatMessage("user", json.dumps(payload, ensure_ascii=False))
        last_error = ""
        for _attempt in range(2):  # one retry, then the lexical path
            try:
                resp = self.chat.complete([message], system=self._system, json_mode=True)
            except SkillOptError as exc:
                last_error = exc.message
                continue
            self._count(resp)
            try:
                labels = parse_reply(resp.text, ids)
            except LabelReplyError as exc:
                last_error = str(exc)
                continue
            by_hash = {chunk[ids.index(rid)].hash: label for rid, label in labels.items()}
            self._store(by_hash)
            return by_hash
        self.report.problems.append(
            f"labelling {len(chunk)} requests failed twice ({last_error}); they were mined lexically and are "
            "retried next night"
        )
        return {}

    def _count(self, resp: ChatResponse) -> None:
        self.report.model_calls += max(1, resp.usage.calls)
        self.report.tokens += resp.usage.input_tokens + resp.usage.output_tokens
        self.report.cost_usd += resp.usage.cost_usd

    def _store(self, labels: dict[str, Label]) -> None:
        now = utcnow_iso()
        rows = [
            {
                "hash": h,
                "kind": lab.kind,
                "intent": lab.intent,
                "work": lab.work,
                "rules_json": json.dumps(lab.rules, ensure_ascii=False),
                "one_off": lab.one_off,
                "prompt_version": PROMPT_VERSION,
                "model": getattr(self.chat, "model", "") or "",
                "labelled_at": now,
            }
            for h, lab in labels.items()
        ]
        with self.db.conn:
            self.db.table("request_labels").upsert_all(rows, pk="hash")
        self.report.labelled += len(rows)
        for lab in labels.values():
            if lab.work and lab.work not in self._work:
                self._work.append(lab.work)
