"""Scoring shared by the built-in benchmarks, written to match each benchmark's official metric.

Scores decide which skill edits survive the gate, so a scorer that is slightly off (a missing article rule,
a comma in a number, a float printed as 3.0000001) quietly trains the skill toward the scorer's bug.
Every function here is unit-tested against hand-checked examples in `tests/benchmarks/test_scoring.py`.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

# --------------------------------------------------------------------------------------------------
# SQuAD-style text answers (SearchQA, OfficeQA fallback)
# --------------------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """The official SQuAD normalization: lower case, drop punctuation and articles, collapse spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalized prediction equals any normalized gold answer."""
    pred = normalize_answer(prediction)
    return 1.0 if any(pred == normalize_answer(g) for g in golds) else 0.0


def _f1_tokens(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    if not pred_tokens or not gold_tokens:
        # SQuAD: if either is empty, F1 is 1 when both are empty, else 0.
        return 1.0 if pred_tokens == gold_tokens else 0.0
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    """SQuAD token F1 over normalized answers, the best over the gold answers."""
    pred_tokens = normalize_answer(prediction).split()
    scores = [_f1_tokens(pred_tokens, normalize_answer(g).split()) for g in golds]
    return max(scores, default=0.0)


# --------------------------------------------------------------------------------------------------
# ANLS (DocVQA)
# --------------------------------------------------------------------------------------------------


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute each cost 1)."""
    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _anls_normalize(text: str) -> str:
    # The DocVQA evaluation compares lower-cased answers with surrounding and repeated spaces removed.
    return " ".join(text.strip().lower().split())


def anls(prediction: str, golds: Iterable[str], threshold: float = 0.5) -> float:
    """Average Normalized Levenshtein Similarity for one question (the DocVQA metric).

    Similarity to a gold answer is 1 - distance / max(len); below `1 - threshold` it counts as 0, so a
    wrong answer that happens to share letters earns nothing. The best gold answer counts.
    """
    pred = _anls_normalize(prediction)
    best = 0.0
    for gold in golds:
        g = _anls_normalize(gold)
        longest = max(len(pred), len(g))
        if longest == 0:
            return 1.0
        nl = levenshtein(pred, g) / longest
        score = 1.0 - nl if nl < threshold else 0.0
        best = max(best, score)
    return best


# --------------------------------------------------------------------------------------------------
# Numbers with commas and units (OfficeQA)
# --------------------------------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"[-+−]?\(?\$?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+−]?\.\d+")
_UNIT_WORDS = (
    "percent",
    "percentage points",
    "per cent",
    "dollars",
    "usd",
    "million",
    "millions",
    "billion",
    "billions",
    "thousand",
    "thousands",
    "trillion",
)


def parse_numbers(text: str) -> list[float]:
    """Every number written in `text`, with thousands separators, currency signs and signs understood.

    `(1,234)` is read as -1234, the accounting convention used in financial tables.
    """
    out: list[float] = []
    for m in _NUMBER_RE.finditer(text):
        raw = m.group(0)
        negative = raw.lstrip().startswith(("-", "−")) or (
            raw.lstrip().startswith("(") and text[m.end() : m.end() + 1] == ")"
        )
        digits = re.sub(r"[^\d.]", "", raw)
        if not digits or digits == ".":
            continue
        try:
            value = float(digits)
        except ValueError:
            continue
        out.append(-value if negative else value)
    return out


def normalize_number_text(text: str) -> str:
    """Text with units and thousands separators removed, so '$1,234 million' reads '1234'."""
    t = text.lower().replace("−", "-")
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)
    t = t.replace("$", " ").replace("%", " ")
    for word in sorted(_UNIT_WORDS, key=len, reverse=True):
        t = re.sub(rf"\b{re.escape(word)}\b", " ", t)
    return normalize_answer(t)


def numbers_equal(a: float, b: float, rel_tol: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-9)


def numeric_exact_match(prediction: str, golds: Iterable[str], rel_tol: float = 0.0) -> float:
    """OfficeQA's hard score: numbers compared as numbers (commas, currency and units ignored), else text.

    A numeric gold answer matches when the prediction states that number (its last number, since models
    tend to restate the question's numbers before the result). A textual gold answer falls back to
    normalized exact match on unit-stripped text. `rel_tol` > 0 allows a relative tolerance.
    """
    for gold in golds:
        gold_numbers = parse_numbers(gold)
        if len(gold_numbers) == 1 and normalize_number_text(gold).replace(".", "").replace("-", "").isdigit():
            pred_numbers = parse_numbers(prediction)
            if pred_numbers and math.isclose(
                pred_numbers[-1], gold_numbers[0], rel_tol=rel_tol, abs_tol=1e-9
            ):
                return 1.0
            continue
        if normalize_number_text(prediction) == normalize_number_text(gold):
            return 1.0
    return 0.0


def numeric_token_f1(prediction: str, golds: Iterable[str]) -> float:
    """Token F1 after number normalization, so '1,234' and '1234' count as the same token."""
    pred_tokens = normalize_number_text(prediction).split()
    return max((_f1_tokens(pred_tokens, normalize_number_text(g).split()) for g in golds), default=0.0)


# --------------------------------------------------------------------------------------------------
# Spreadsheet cells (SpreadsheetBench)
# --------------------------------------------------------------------------------------------------


def normalize_cell(value: Any) -> Any:
    """The comparable form of a cell value: numbers rounded to 2 decimals, empty is '', dates as ISO text.

    Numeric text ('12.50') is read as a number: a formula result written back as text must not fail a
    task whose answer is visibly the same.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"  # as Excel shows it; never equal to the numbers 1 and 0
    if isinstance(value, (int, float)):
        return round(float(value), 2) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    text = str(value)
    stripped = text.strip()
    if stripped == "":
        return ""
    try:
        return round(float(stripped.replace(",", "")), 2) + 0.0 if _looks_numeric(stripped) else text
    except ValueError:
        return text


def _looks_numeric(text: str) -> bool:
    return bool(re.fullmatch(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+", text))


def cells_match(actual: Any, expected: Any) -> bool:
    return bool(normalize_cell(actual) == normalize_cell(expected))


_CELL_RE = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d+)$")


def column_index(letters: str) -> int:
    """'A' -> 1, 'Z' -> 26, 'AA' -> 27."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n


def parse_answer_position(position: str, default_sheet: str | None = None) -> list[tuple[str | None, str]]:
    """SpreadsheetBench `answer_position` ("'Sheet 1'!A1:C3", "H3:H5", "Sheet1!D2,Sheet2!A1") as
    (sheet or None, range) pairs. None means the workbook's first sheet."""
    parts: list[tuple[str | None, str]] = []
    for chunk in _split_outside_quotes(position, ","):
        chunk = chunk.strip()
        if not chunk:
            continue
        if "!" in chunk:
            sheet, _, rng = chunk.rpartition("!")
            sheet = sheet.strip()
            if len(sheet) >= 2 and sheet[0] == sheet[-1] == "'":
                sheet = sheet[1:-1].replace("''", "'")
            parts.append((sheet, rng.strip()))
        else:
            parts.append((default_sheet, chunk))
    return parts


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    out, buf, quoted = [], "", False
    for ch in text:
        if ch == "'":
            quoted = not quoted
        if ch == sep and not quoted:
            out.append(buf)
            buf = ""
        else:
            buf += ch
    out.append(buf)
    return out


def range_cells(rng: str) -> list[str]:
    """Every cell name in 'A1:C2' (row by row), or the one cell of 'B7'."""
    first, _, last = rng.replace("$", "").partition(":")
    m1 = _CELL_RE.match(first.strip())
    m2 = _CELL_RE.match((last or first).strip())
    if not m1 or not m2:
        raise ValueError(f"not a cell range: {rng!r}")
    c1, r1 = column_index(m1.group(1)), int(m1.group(2))
    c2, r2 = column_index(m2.group(1)), int(m2.group(2))
    cells = []
    for r in range(min(r1, r2), max(r1, r2) + 1):
        for c in range(min(c1, c2), max(c1, c2) + 1):
            cells.append(f"{column_letters(c)}{r}")
    return cells


def column_letters(index: int) -> str:
    letters = ""
    while index > 0:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


# --------------------------------------------------------------------------------------------------
# Final answers and choice labels (all chat benchmarks)
# --------------------------------------------------------------------------------------------------

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_LINE = re.compile(r"^\W*(?:final\s+)?answer\W*[:：]\s*(.*)$", re.IGNORECASE)


def extract_final_answer(text: str) -> str:
    """The answer a model committed to: the last `<answer>...</answer>`, else the last 'Answer: ...'
    line, else the last non-empty line. Markdown emphasis around it is dropped."""
    tags = _ANSWER_TAG.findall(text)
    if tags:
        return _clean(tags[-1])
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        m = _ANSWER_LINE.match(line.strip())
        if m:
            return _clean(m.group(1))
    return _clean(lines[-1]) if lines else ""


def _clean(text: str) -> str:
    return text.strip().strip("*_`").strip()


def extract_choice_label(text: str, labels: Sequence[str]) -> str | None:
    """The choice label ('A'...'E') a reply settles on, or None when it names none or several at once.

    Read from the final answer: a lone label ('C', '(C)', 'c.'), else a label that opens the answer
    ('B. Because ...'), else the only standalone capital label in it ('the answer is D').
    """
    answer = extract_final_answer(text).strip()
    wanted = {label.upper() for label in labels}
    m = re.fullmatch(r"[\(\[]?\s*([A-Za-z])\s*[\)\].:]?", answer)
    if m and m.group(1).upper() in wanted:
        return m.group(1).upper()
    m = re.match(r"[\(\[]?([A-Z])[\)\].:](?:\s|$)", answer)
    if m and m.group(1) in wanted:
        return m.group(1)
    found = set(re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", answer)) & wanted
    if len(found) == 1:
        return found.pop()
    return None
