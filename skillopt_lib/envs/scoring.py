"""Scoring shared by the built-in benchmarks, each rule following the benchmark's official scoring code.

Scores decide which skill edits survive the gate, so a scorer that is slightly off (a missing article rule,
a comma in a number, a float printed as 3.0000001) quietly trains the skill toward the scorer's bug. Each
function names the official code it follows and the revision it was compared against; docs/benchmarks.md
lists them with every deliberate difference, and `tests/lib/envs/test_bench_official_agreement.py` runs the
official files' own examples and the cases where an earlier version of these rules disagreed.
"""

from __future__ import annotations

import datetime as _dt
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

# --------------------------------------------------------------------------------------------------
# SQuAD-style text answers (SearchQA)
# --------------------------------------------------------------------------------------------------
#
# SearchQA's release ships no scorer; its published exact match and F1 are the SQuAD v1.1 metrics, which
# the MRQA shared task's `mrqa_official_eval.py` (mrqa/MRQA-Shared-Task-2019 at 59ed9b1, 2019-04-29) uses
# for SearchQA. Under v1.1 an answer that normalizes to nothing ('The The') has F1 0 even against itself
# (SQuAD v2.0 gives 1); exact match still counts it equal.

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """The SQuAD v1.1 normalization: lower case, drop punctuation, then the articles, collapse spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalized prediction equals any normalized gold answer."""
    pred = normalize_answer(prediction)
    return 1.0 if any(pred == normalize_answer(g) for g in golds) else 0.0


def _f1_tokens(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    # SQuAD v1.1: no token in common (also when both are empty) is 0.
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    """SQuAD v1.1 token F1 over normalized answers, the best over the gold answers."""
    pred_tokens = normalize_answer(prediction).split()
    scores = [_f1_tokens(pred_tokens, normalize_answer(g).split()) for g in golds]
    return max(scores, default=0.0)


# --------------------------------------------------------------------------------------------------
# ANLS (DocVQA)
# --------------------------------------------------------------------------------------------------
#
# The DocVQA evaluation script the challenge site (rrc.cvc.uab.es, ch=17) and docvqa.org hand out, compared
# as kept in QwenLM/Qwen-VL `eval_mm/infographicsvqa_eval.py` (e6bbb9d, 2023-08-25): both answers are
# lower-cased with surrounding and repeated spaces removed, the edit distance of those is divided by the
# longer of the two answers *as given* (before that clean-up; `len(s.upper())`), and a question scores
# 1 - the smallest such distance over its gold answers, or 0 when that is below the 0.5 threshold (so a
# distance of exactly half scores 0.5).


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
    return " ".join(text.strip().lower().split())


def anls(prediction: str, golds: Iterable[str], threshold: float = 0.5) -> float:
    """Average Normalized Levenshtein Similarity of one question (the DocVQA metric), by the official
    script's arithmetic (see above); a wrong answer that happens to share letters earns nothing."""
    pred = _anls_normalize(prediction)
    distances = []
    for gold in golds:
        length = max(len(gold.upper()), len(prediction.upper()))
        distances.append(0.0 if length == 0 else levenshtein(_anls_normalize(gold), pred) / length)
    if not distances:
        return 0.0
    score = 1 - min(distances)
    return 0.0 if score < threshold else score


# --------------------------------------------------------------------------------------------------
# Numbers with commas and units (OfficeQA's soft score; its hard score is `envs/officeqa/reward.py`)
# --------------------------------------------------------------------------------------------------

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


def normalize_number_text(text: str) -> str:
    """Text with units and thousands separators removed, so '$1,234 million' reads '1234'."""
    t = text.lower().replace("−", "-")
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)
    t = t.replace("$", " ").replace("%", " ")
    for word in sorted(_UNIT_WORDS, key=len, reverse=True):
        t = re.sub(rf"\b{re.escape(word)}\b", " ", t)
    return normalize_answer(t)


def numeric_token_f1(prediction: str, golds: Iterable[str]) -> float:
    """Token F1 after number normalization, so '1,234' and '1234' count as the same token."""
    pred_tokens = normalize_number_text(prediction).split()
    return max((_f1_tokens(pred_tokens, normalize_number_text(g).split()) for g in golds), default=0.0)


# --------------------------------------------------------------------------------------------------
# Spreadsheet cells (SpreadsheetBench)
# --------------------------------------------------------------------------------------------------
#
# The value rules of SpreadsheetBench's official evaluation (`transform_value` / `compare_cell_value` in
# RUCKBReasoning/SpreadsheetBench `evaluation/evaluation.py`, unchanged from the paper's release aa92f06,
# 2024-06-24, to e2758ac, 2025-10-09, the newest change to the file):
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
    """The choice label a reply gives, read as LiveMathematicianBench's `eval.py` reads it
    (BaohaoLiao/LiveMathematicianBench at 1462443, scoring unchanged since a6f7188): the last
    `\\boxed{X}`, else a reply that is one letter (either case), else the last standalone capital label
    anywhere in the reply; None when there is none. The official file's labels are A-E; a record with a
    different number of choices uses its own labels."""
    letters = "".join(re.escape(label) for label in labels if len(label) == 1)
    if not letters:
        return None
    reply = text.strip()
    boxed = re.findall(rf"\\boxed\{{([{letters}])\}}", reply)
    if boxed:
        return str(boxed[-1])
    if len(reply) == 1 and reply.upper() in labels:
        return reply.upper()
    standalone = re.findall(rf"\b([{letters}])\b", reply)
    return str(standalone[-1]) if standalone else None
