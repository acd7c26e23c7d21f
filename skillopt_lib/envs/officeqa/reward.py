"""OfficeQA's official answer matching (`score_answer` in the benchmark's `reward.py`), at two revisions.

The hard score the gate trains on is this match, so it has to be the benchmark's own: a scorer that accepts
"5.1 or 6.2" for 5.1 teaches the skill to hedge. The rules were written here from reading the official file
at two pinned commits of github.com/databricks/officeqa (docs/benchmarks.md lists them and every difference):

- `current` (default): `reward.py` as of commit 309dc01 (2026-06-13), the newest change to the file.
- `paper`: `reward.py` as of commit 2a2c3b0 (2026-03-02), the file the OfficeQA technical report's results
  (recorded 2026-03-09) were scored with.

What changed between the two, and is switched by `_Rules`:

- a reply must be a direct answer (one line, at most 250 characters, exactly as many numbers as the gold
  answer, no markup; a text answer must equal the gold text) and must not say "unable to determine";
- accounting negatives: "(3.2)" reads as -3.2 (not a year in parentheses), currency symbols are dropped;
- a comma only joins digits of a well-formed thousands group ("1,234" but not "1,2345");
- unit words near a number (million, billion, "m", "b", ...) must agree when both sides have one;
- a gold answer that is one bracketed list ("[8, 152260]") is compared in order, and a reply that packs the
  list ("[8,152,260]") may be split at its commas into that many numbers;
- whitespace runs count as one space (so removing "(OASI)" from a name leaves no double space).

Deliberate differences from the official file, for both revisions: an empty reply scores 0 (the paper
revision raises an error on it), and only the first `MAX_SEGMENTATIONS` ways of splitting a reply at its
commas are tried against a gold list (the official file tries every one, which for a 250-character run of
"000," would take longer than any benchmark run; no reply of a sane length reaches the cap).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

REVISIONS = {
    "current": "databricks/officeqa reward.py at 309dc01 (2026-06-13)",
    "paper": "databricks/officeqa reward.py at 2a2c3b0 (2026-03-02), as the technical report's results",
}
MAX_DIRECT_CHARS = 250
MAX_SEGMENTATIONS = 10_000

_CURRENCY = "$£€¥₹¢₩₽"
_AMOUNT = r"\d{1,3}(?:,\d{3})*(?:\.\d+)?|\d+(?:\.\d+)?"
_ACCOUNTING = re.compile(rf"\(\s*([{_CURRENCY}])?\s*({_AMOUNT})\s*\)")
_CURRENCY_SIGN = re.compile(rf"[{_CURRENCY}]")
_NUMBER = re.compile(r"-?\d+\.?\d*%?")
_LIST_ITEM = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?")
_BRACKETED = re.compile(r"\[([^\[\]]+)\]")
_MARKUP = re.compile(r"<[^>]*>")
_PARENTHETICAL = re.compile(r"\([^)]*\)")
_FINAL_ANSWER = re.compile(r"<FINAL_ANSWER>\s*(.*?)\s*</FINAL_ANSWER>", re.DOTALL | re.IGNORECASE)
_UNIT_WORDS = (
    "trillion", "trillions", "billion", "billions", "million", "millions", "thousand", "thousands",
    "hundred", "hundreds", "percent", "percentage", "%",
)  # fmt: skip
# In order: the first that appears within 20 characters of a number is its unit.
_UNITS = (
    ("trillion", re.compile(r"\btrillions?\b")),
    ("billion", re.compile(r"\bbillions?\b|\bb\b")),
    ("million", re.compile(r"\bmillions?\b|\bm\b")),
    ("thousand", re.compile(r"\bthousands?\b|\bk\b")),
)


@dataclass(frozen=True)
class _Rules:
    """What one revision of the official file does (see the module docstring)."""

    thousands: re.Pattern[str]
    one_space: bool
    accounting: bool
    units: bool
    lists: bool
    direct_answer: bool
    refuse_unable: bool
    last_tag: bool


_RULES = {
    "current": _Rules(
        thousands=re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)"),
        one_space=True,
        accounting=True,
        units=True,
        lists=True,
        direct_answer=True,
        refuse_unable=True,
        last_tag=True,
    ),
    "paper": _Rules(
        thousands=re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"),
        one_space=False,
        accounting=False,
        units=False,
        lists=False,
        direct_answer=False,
        refuse_unable=False,
        last_tag=False,
    ),
}

Number = tuple[float, str]  # a value and the 20 characters around it, lower case (where its unit is read)


def rules_for(revision: str) -> _Rules:
    if revision not in _RULES:
        raise ValueError(f"unknown OfficeQA scorer revision {revision!r}; use one of {', '.join(_RULES)}")
    return _RULES[revision]


def final_answer(text: str, revision: str = "current") -> str | None:
    """The content of the `<FINAL_ANSWER>` tags the official harness asks for (the last pair, the first at
    the paper revision), or None when the reply has none."""
    tags = _FINAL_ANSWER.findall(text)
    if not tags:
        return None
    return str(tags[-1] if rules_for(revision).last_tag else tags[0]).strip()


def score_answer(gold: str, answer: str, tolerance: float = 0.0, revision: str = "current") -> float:
    """1.0 when `answer` matches the official answer `gold`, by the official rules of `revision`; numbers
    may differ by the relative `tolerance` (0 to 1)."""
    rules = rules_for(revision)
    if not 0 <= tolerance <= 1:
        raise ValueError(f"tolerance must be between 0 and 1, got {tolerance}")
    if not gold or not answer.strip():
        return 0.0
    if rules.direct_answer and not _direct_answer(gold, answer, rules):
        return 0.0
    return 1.0 if _matches(gold, answer, tolerance, rules) else 0.0


def is_direct_answer(gold: str, answer: str, revision: str = "current") -> bool:
    """Whether `answer` has the shape the current revision's direct-answer guard wants (one line, no
    markup, the gold answer's count of numbers); the paper revision has no guard."""
    rules = rules_for(revision)
    if not rules.direct_answer:
        return True
    return bool(answer.strip()) and _direct_answer(gold, answer, rules, same_text=False)


# ---------------------------------------------------------------------------------------------- reading


def _clean(text: str, rules: _Rules) -> str:
    text = text.replace("\u2212", "-")
    return re.sub(r"\s+", " ", text).strip() if rules.one_space else text


def _without_accounting(text: str) -> str:
    """'(3.2)' and '($1,200)' become negative numbers ('(2023)' stays a year); currency signs go."""

    def negative(m: re.Match[str]) -> str:
        if m.group(1) is None and _is_year(float(m.group(2).replace(",", ""))):
            return m.group(0)
        return f"-{m.group(2)}"

    return _CURRENCY_SIGN.sub("", _ACCOUNTING.sub(negative, text))


def numbers(text: str, revision: str = "current") -> list[Number]:
    """Every number in `text` as the official file reads it, with the context its unit is read from."""
    return _numbers(text, rules_for(revision))


def _numbers(text: str, rules: _Rules) -> list[Number]:
    text = _clean(text, rules)
    if rules.accounting:
        text = _without_accounting(text)
    text = rules.thousands.sub(lambda m: m.group(0).replace(",", ""), text)
    found = []
    for m in _NUMBER.finditer(text):
        context = text[max(0, m.start() - 20) : m.end() + 20].lower()
        found.append((float(m.group(0).rstrip("%")), context))
    return found


def _unit(context: str) -> str | None:
    return next((name for name, pattern in _UNITS if pattern.search(context)), None)


def _units_agree(gold: Number, answer: Number, rules: _Rules) -> bool:
    if not rules.units:
        return True
    a, b = _unit(gold[1]), _unit(answer[1])
    return a is None or b is None or a == b


def _is_year(value: float) -> bool:
    return 1900 <= value <= 2100 and value == int(value)


def _close(gold: float, answer: float, tolerance: float) -> bool:
    if gold == 0:
        return answer == 0
    return abs(gold - answer) / abs(gold) <= tolerance


def _words(text: str, rules: _Rules) -> str:
    """What is left of `text` without numbers, commas, unit words and punctuation ('' under 2 characters)."""
    if not text:
        return ""
    cleaned = _NUMBER.sub("", _clean(text, rules).lower()).replace(",", "")
    for word in _UNIT_WORDS:
        cleaned = re.sub(rf"\b{word}\b", "", cleaned)
    cleaned = " ".join(re.sub(r"[^\w\s]", " ", cleaned).split())
    return cleaned if len(cleaned) >= 2 else ""


def _words_agree(gold: str, answer: str, rules: _Rules) -> bool:
    gold_words = _words(gold, rules)
    if not gold_words:
        return True
    answer_words = _words(answer, rules)
    return bool(answer_words) and (gold_words in answer_words or answer_words in gold_words)


def _text_key(text: str, rules: _Rules) -> str:
    """A text answer as compared: lower case, outer quotes and parenthetical parts removed."""
    text = text.strip().lower().strip('"').strip("'")
    text = _PARENTHETICAL.sub("", text)
    return re.sub(r"\s+", " ", text).strip() if rules.one_space else text.strip()


def _drop_years(gold_numbers: list[Number], found: list[Number], gold: str, rules: _Rules) -> list[Number]:
    """Years mentioned in passing ('in 2023') do not count, unless the gold answer is a year or has words
    (one number), or holds a year (several numbers)."""
    if not gold_numbers:
        return found
    if len(gold_numbers) == 1:
        keep = _is_year(gold_numbers[0][0]) or bool(_words(gold, rules))
    else:
        keep = any(_is_year(value) for value, _ in gold_numbers)
    return found if keep else [n for n in found if not _is_year(n[0])]


# ---------------------------------------------------------------------------------------------- lists


def _bracketed_body(text: str, rules: _Rules) -> str | None:
    """The inside of the one bracketed list in `text`, when nothing outside it is a number."""
    text = _clean(text, rules)
    found = list(_BRACKETED.finditer(text))
    if len(found) != 1:
        return None
    m = found[0]
    if re.search(r"\d", (text[: m.start()] + text[m.end() :]).strip()):
        return None
    return m.group(1)


def _list_item(raw: str, rules: _Rules) -> float | None:
    item = raw.strip()
    if not item or ("," in item and re.search(r"\s,|,\s", item)):
        return None
    item = _without_accounting(_clean(item, rules))
    if not _LIST_ITEM.fullmatch(item):
        return None
    return float(item.rstrip("%").replace(",", ""))


def _segmentations(text: str, count: int, rules: _Rules) -> Iterator[list[float]]:
    """Ways to read `text` (or its one bracketed list) as exactly `count` numbers by grouping the pieces
    between its commas in order, each group a number ('152,260' may be one); distinct, in the official
    order, from the first `MAX_SEGMENTATIONS` ways."""
    if count < 2:
        return
    body = _bracketed_body(text, rules) or _clean(text, rules)
    cuts = [m.start() for m in re.finditer(",", body)]
    starts, ends = [0, *(c + 1 for c in cuts)], [*cuts, len(body)]
    pieces = len(starts)
    if pieces < count:
        return
    feasible: dict[tuple[int, int], bool] = {}

    def can(i: int, left: int) -> bool:
        if left == 0:
            return i == pieces
        key = (i, left)
        if key not in feasible:
            feasible[key] = any(
                _list_item(body[starts[i] : ends[j - 1]], rules) is not None and can(j, left - 1)
                for j in range(i + 1, pieces - left + 2)
            )
        return feasible[key]

    def walk(i: int, left: int) -> Iterator[list[float]]:
        if left == 0:
            if i == pieces:
                yield []
            return
        for j in range(i + 1, pieces - left + 2):
            value = _list_item(body[starts[i] : ends[j - 1]], rules)
            if value is not None and can(j, left - 1):
                for rest in walk(j, left - 1):
                    yield [value, *rest]

    seen: set[tuple[float, ...]] = set()
    for tried, values in enumerate(walk(0, count), 1):
        key = tuple(values)
        if key not in seen:
            seen.add(key)
            yield values
        if tried >= MAX_SEGMENTATIONS:
            return


def _gold_list(gold: str, gold_numbers: list[Number], rules: _Rules) -> list[Number] | None:
    """The gold numbers when the gold answer is one bracketed list of exactly them, else None."""
    if not rules.lists or len(gold_numbers) < 2:
        return None
    body = _bracketed_body(gold, rules)
    if body is None:
        return None
    values = [value for value, _ in gold_numbers]
    if not any(candidate == values for candidate in _segmentations(body, len(values), rules)):
        return None
    return gold_numbers


def _in_order(gold: list[Number], found: list[Number], tolerance: float, rules: _Rules) -> bool:
    return len(gold) == len(found) and all(
        _units_agree(g, f, rules) and _close(g[0], f[0], tolerance) for g, f in zip(gold, found, strict=True)
    )


def _list_match(
    gold_list: list[Number], gold: str, answer: str, found: list[Number], tolerance: float, rules: _Rules
) -> bool:
    for values in _segmentations(answer, len(gold_list), rules):
        if _in_order(gold_list, [(value, "") for value in values], tolerance, rules):
            return True
    return _in_order(gold_list, _drop_years(gold_list, found, gold, rules), tolerance, rules)


# ---------------------------------------------------------------------------------------------- matching


def _direct_answer(gold: str, answer: str, rules: _Rules, *, same_text: bool = True) -> bool:
    """The current revision's guard: the reply is one direct answer of the gold answer's shape (and, for a
    text answer, the gold text itself)."""
    answer = answer.strip()
    if len([line for line in answer.splitlines() if line.strip()]) > 1 or len(answer) > MAX_DIRECT_CHARS:
        return False
    gold_numbers = _numbers(gold, rules)
    found = _numbers(answer, rules)
    if not gold_numbers:
        return not found and (not same_text or _text_key(gold, rules) == _text_key(answer, rules))
    if len(_drop_years(gold_numbers, found, gold, rules)) != len(gold_numbers):
        gold_list = _gold_list(gold, gold_numbers, rules)
        if gold_list is None or next(_segmentations(answer, len(gold_list), rules), None) is None:
            return False
    return not _MARKUP.search(answer)


def _matches(gold: str, answer: str, tolerance: float, rules: _Rules) -> bool:
    if rules.refuse_unable and "unable to determine" in answer.lower():
        return False
    gold_numbers = _numbers(gold, rules)
    found = _numbers(answer, rules)
    if gold_numbers and found:
        gold_list = _gold_list(gold, gold_numbers, rules)
        if gold_list is not None:
            return _list_match(gold_list, gold, answer, found, tolerance, rules)
        if not _words_agree(gold, answer, rules):
            return False
        if len(gold_numbers) > 1:
            keep_years = any(_is_year(value) for value, _ in gold_numbers)
            candidates = [n for n in found if keep_years or not _is_year(n[0])]
            return all(
                any(_units_agree(g, n, rules) and _close(g[0], n[0], tolerance) for n in candidates)
                for g in gold_numbers
            )
        target = gold_numbers[0]
        candidates = _drop_years(gold_numbers, found, gold, rules)
        return any(_units_agree(target, n, rules) and _close(target[0], n[0], tolerance) for n in candidates)
    return _text_key(gold, rules) in _text_key(answer, rules)
