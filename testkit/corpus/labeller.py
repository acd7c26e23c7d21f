"""A scripted labelling model for mining's model path, served by the scripted model server.

It answers the way a competent model would: it reads the words of each request it is shown (in English,
Spanish, Portuguese, French, German or Chinese), recognises the kind of work from what the words mean, and
writes a canonical English intent that paraphrases: for the same kind of work it picks one of several
wordings by a hash of the request, so clustering has to cope with different words for the same work. It
never sees a family id, a corpus file name or the labels file.

Faults for the tests: `mode` "not-json", "unknown-id" or "slow" (answers after `delay` seconds, past the
client's timeout) for the first `bad_calls` labelling calls, then good answers.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

from skillopt_lib.testing.script import Conversation, Fault, Rule, Script, Selection, Step

# (kind of work, what the words look like, canonical intents that paraphrase each other)
CONCEPTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "markdown docs cleanup",
        r"markdown|docs?[- ]lint|docs (?:check|linter)",
        ("fix markdown lint problems", "clean up documentation formatting", "make the docs linter pass"),
    ),
    (
        "release notes",
        r"changelog|release notes|\brelease\b",
        ("add a changelog entry", "write release notes", "record changes in the changelog"),
    ),
    (
        "type annotations",
        r"type hints?|annotat|typing|type-annotate|\btypes?\b|check_types",
        ("add type annotations", "annotate functions with types", "make the type check pass"),
    ),
    (
        "lint fixes",
        r"\blint|linter|style errors",
        ("fix linter warnings", "make the linter pass", "clean up style violations"),
    ),
    (
        "unit tests",
        r"\btests?\b|testes|pytest|test suite|\bcover\b",
        ("write unit tests", "add tests for a module", "increase test coverage"),
    ),
    (
        "progress logging",
        r"output|report|\blog|say which|message|输出|how many (?:records|rows)|row counts",
        ("report progress of a job", "add progress messages", "log what the job does"),
    ),
)
RULES: tuple[tuple[str, str], ...] = (
    (r"noqa", "Fix the code instead of silencing the linter with noqa."),
    (r"print|logging", "Use logging, not print."),
    (r"unittest|fixture", "Use pytest fixtures, not unittest."),
    (r"80|caracteres|líneas", "Keep lines at most 80 characters; wrap them."),
    (r"Einträge|oben", "Put new changelog entries at the top."),
    (r"\bAny\b", "Do not use Any; write the real types."),
)
ACK = re.compile(
    r"^\W*(?:thanks|lgtm|great|ok\b|perfeito|obrigado|super|danke|好的|谢谢|leave it|merci)", re.IGNORECASE
)
CORRECTION = re.compile(r"^\W*(?:no\b|nein\b|pas de|不要)|não|instead|nicht", re.IGNORECASE)
QUESTION = re.compile(r"\?|？|^show me|^what did", re.IGNORECASE)
ONE_OFF = re.compile(r"^(?:what|how|why|explain|draw|list|write a haiku|rename)\b", re.IGNORECASE)


def _pick(options: tuple[str, ...], text: str) -> str:
    return options[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(options)]


def _concept(text: str) -> tuple[str, str] | None:
    for work, pattern, intents in CONCEPTS:
        if re.search(pattern, text, re.IGNORECASE):
            return work, _pick(intents, text)
    return None


def label_one(text: str, previous: str | None) -> dict[str, Any]:
    """The label a competent model gives one request."""
    if text.startswith("/"):
        return {"kind": "meta", "intent": "", "work": "", "rules": [], "one_off": False}
    about = previous or text
    concept = _concept(about)
    work, intent = concept if concept else (" ".join(about.lower().split()[:2]), about.lower()[:60])
    kind = "task"
    rules: list[str] = []
    if previous:
        if ACK.match(text):
            kind = "ack"
        elif CORRECTION.search(text):
            kind = "correction"
            rules = [r for pattern, r in RULES if re.search(pattern, text)] or [text]
        elif QUESTION.search(text):
            kind = "question"
        else:
            kind = "followup"
    one_off = kind == "task" and concept is None and bool(ONE_OFF.match(text) or len(text.split()) < 12)
    return {"kind": kind, "intent": intent, "work": work, "rules": rules, "one_off": one_off}


def reply_for(payload: dict[str, Any]) -> str:
    labels = [{"id": r["id"], **label_one(r["text"], r.get("previous"))} for r in payload.get("requests", [])]
    return json.dumps({"labels": labels}, ensure_ascii=False)


class LabellerScript(Script):
    """Answers mining's labelling calls (recognised by the prompt); anything else gets the default text."""

    def __init__(self, mode: str = "good", bad_calls: int = 0, delay: float = 3.0) -> None:
        super().__init__(rules=[], default_text="{}")
        self.mode = mode
        self.bad_calls = bad_calls
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()
        self._rule = Rule("labeller")

    def select(self, conv: Conversation) -> Selection:
        if "You label the messages a person typed" not in conv.system:
            return Selection(None, Step(text=self.default_text), "default", conv.turns_since_user)
        with self._lock:
            self.calls += 1
            bad = self.calls <= self.bad_calls
        try:
            payload = json.loads(conv.last_user_text)
        except ValueError:
            payload = {}
        text = reply_for(payload)
        if bad and self.mode == "not-json":
            text = "Here are the labels you asked for: " + text[:80]
        elif bad and self.mode == "unknown-id":
            data = json.loads(text)
            data["labels"].append({**(data["labels"] or [{}])[0], "id": "r9999"})
            text = json.dumps(data)
        step = Step(text=text)
        if bad and self.mode == "slow":
            step = Step(text=text, fault=Fault(delay=self.delay))
        return Selection(self._rule, step, "labeller", conv.turns_since_user)
