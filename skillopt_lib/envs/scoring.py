"""Scoring shared by the built-in benchmarks, written to match each benchmark's official metric.

Scores decide which skill edits survive the gate, so a scorer that is slightly off (a missing article rule,
a comma in a number, a float printed as 3.0000001) quietly trains the skill toward the scorer's bug.
Every function here is unit-tested against hand-checked examples in `tests/lib/envs/test_bench_scoring.py`.
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
#
# The rules of the official OfficeQA scorer (`score_answer` in the benchmark's reward module):
#
# - Unicode minus signs read as '-', and every comma is dropped before numbers are read.
# - A number is an optional '-', digits, an optional '.' and more digits, an optional '%'. Currency signs
#   and parentheses are not part of it: '(3.2)' is +3.2, and '.5' is read as 5.
# - Units ('million', '%') are not applied: '543 million' and '543' are the same answer, '543000000' is not.
# - A gold answer with one number matches when *any* number in the prediction is within the relative
#   tolerance (0 by default: equal). Year-like numbers (integers 1900-2100) in the prediction are skipped,
#   unless the gold number is year-like itself or the gold answer has words besides numbers and units.
# - A gold answer with several numbers matches when every one of them is found in the prediction.
# - When the gold answer has words besides numbers and units ('March 1977'), those words must also appear in
#   the prediction (or the prediction's words in the gold answer's).
# - When either side has no number, the gold text (lower case, quotes and parenthetical parts removed) must
#   be contained in the prediction's.

_OQA_NUMBER = re.compile(r"-?\d+\.?\d*%?")
_OQA_UNIT_WORDS = (
    "trillion",
    "trillions",
    "billion",
    "billions",
    "million",
    "millions",
    "thousand",
    "thousands",
    "hundred",
    "hundreds",
    "percent",
    "percentage",
)
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


def _oqa_text(text: str) -> str:
    return text.replace("\u2212", "-")


def parse_numbers(text: str) -> list[float]:
    """Every number in `text` as the official OfficeQA scorer reads it (commas dropped, signs only as '-')."""
    out: list[float] = []
    for m in _OQA_NUMBER.finditer(_oqa_text(text).replace(",", "")):
        raw = m.group(0).rstrip("%")
        if raw in ("", "-"):
            continue
        out.append(float(raw))
    return out


def _is_year(value: float) -> bool:
    return 1900 <= value <= 2100 and value == int(value)


def _significant_words(text: str) -> str:
    """What is left of an answer without numbers, commas, unit words and punctuation ('' if under 2 chars)."""
    cleaned = _OQA_NUMBER.sub("", _oqa_text(text).lower()).replace(",", "")
    for word in _OQA_UNIT_WORDS:
        cleaned = re.sub(rf"\b{word}\b", "", cleaned)
    cleaned = " ".join(re.sub(r"[^\w\s]", " ", cleaned).split())
    return cleaned if len(cleaned) >= 2 else ""


def _words_agree(gold: str, prediction: str) -> bool:
    gold_words = _significant_words(gold)
    if not gold_words:
        return True
    pred_words = _significant_words(prediction)
    if not pred_words:
        return False
    return gold_words in pred_words or pred_words in gold_words


def _close(gold: float, pred: float, tolerance: float) -> bool:
    if gold == 0:
        return pred == 0
    return abs(gold - pred) / abs(gold) <= tolerance


def officeqa_match(gold: str, prediction: str, tolerance: float = 0.0) -> bool:
    """Whether `prediction` answers a question whose official answer is `gold`, by the official rules."""
    if not gold.strip() or not prediction.strip():
        return False
    gold_numbers = parse_numbers(gold)
    pred_numbers = parse_numbers(prediction)
    if gold_numbers and pred_numbers:
        words_ok = _words_agree(gold, prediction)
        if len(gold_numbers) > 1:
            keep_years = any(_is_year(g) for g in gold_numbers)
            candidates = [p for p in pred_numbers if keep_years or not _is_year(p)]
            return words_ok and all(any(_close(g, p, tolerance) for p in candidates) for g in gold_numbers)
        target = gold_numbers[0]
        skip_years = not (_is_year(target) or _significant_words(gold))
        return words_ok and any(
            _close(target, p, tolerance) for p in pred_numbers if not (skip_years and _is_year(p))
        )
    gold_text = re.sub(r"\([^)]*\)", "", gold.strip().lower().strip("\"'")).strip()
    pred_text = re.sub(r"\([^)]*\)", "", prediction.strip().lower().strip("\"'")).strip()
    return gold_text in pred_text


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
    """OfficeQA's hard score: 1.0 when `officeqa_match` accepts the prediction for any gold answer.
    `rel_tol` is the official scorer's relative tolerance (0: numbers must be equal)."""
    return 1.0 if any(officeqa_match(g, prediction, rel_tol) for g in golds) else 0.0


def numeric_token_f1(prediction: str, golds: Iterable[str]) -> float:
    """Token F1 after number normalization, so '1,234' and '1234' count as the same token."""
    pred_tokens = normalize_number_text(prediction).split()
    return max((_f1_tokens(pred_tokens, normalize_number_text(g).split()) for g in golds), default=0.0)


# --------------------------------------------------------------------------------------------------
# Spreadsheet cells (SpreadsheetBench)
# --------------------------------------------------------------------------------------------------
#
# The value rules of SpreadsheetBench's official evaluation (`transform_value` / `compare_cell_value`):
#
# - Numbers, booleans included (Python's True is the integer 1), are rounded to 2 decimals as floats.
# - A date-time becomes its Excel serial day number (days since 1899-12-30), rounded to a whole day, so a
#   date and the serial number Excel stores for it are the same answer.
# - A time of day becomes its text without the last three characters ('03:04:05' -> '03:04').
# - Text that Python's float() reads ('12.50', ' 7 ', '1e3') is that number rounded to 2 decimals; other
#   text ('1,234', 'abc ') stays text and is compared exactly.
# - Empty (None) and '' are the same. Otherwise values of different types never match.

_EXCEL_EPOCH = _dt.datetime(1899, 12, 30)


def normalize_cell(value: Any) -> Any:
    """The comparable form of a cell value, by the official evaluation's rules (see above)."""
    if isinstance(value, (int, float)):  # bool is an int, as in the official evaluation
        return round(float(value), 2) + 0.0  # + 0.0 turns -0.0 into 0.0 (equal anyway)
    if isinstance(value, _dt.datetime):
        delta = value - _EXCEL_EPOCH
        return float(round(delta.days + delta.seconds / 86400.0, 0))
    if isinstance(value, _dt.time):
        return str(value)[:-3]
    if isinstance(value, str):
        try:
            return round(float(value), 2) + 0.0
        except ValueError:
            return value
    return value


def cells_match(actual: Any, expected: Any) -> bool:
    a, b = normalize_cell(actual), normalize_cell(expected)
    if a in ("", None) and b in ("", None):
        return True
    if type(a) is not type(b):
        return False
    return bool(a == b)


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
