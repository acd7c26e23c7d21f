"""Recalculate the formulas of workbooks with the `formulas` engine and write their values as JSON.

`python recalc.py VALUES.json BOOK.xlsx [BOOK.xlsx ...]`: every cell of each BOOK that holds a formula is
computed with the pure-Python `formulas` engine and written as {book file name: {sheet title: {cell:
value}}}. Values are JSON numbers, text, booleans or null; an Excel error is its text ('#DIV/0!'). A cell
the engine cannot compute is left out, and so is a book it cannot load, so the caller scores those cells
as formulas without a value.

This is the fallback for machines without LibreOffice. It is run as a script by
`runner.Recalculation` in the same scrubbed, time- and memory-limited subprocess as the model's program,
since the formulas it computes may be the model's; several books share one run because the engine takes
seconds to import. It imports nothing from skillopt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy scalars
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "XlError":
        return str(value)
    if repr(value) == "empty":  # the engine's empty-cell marker
        return None
    return str(value)


def _is_formula(value: Any) -> bool:
    return (isinstance(value, str) and value.startswith("=")) or type(value).__name__ == "ArrayFormula"


def book_values(book: str) -> dict[str, dict[str, Any]]:
    # Imported here, in the sandboxed child only: `formulas` takes seconds to load.
    import formulas
    import openpyxl

    wb = openpyxl.load_workbook(book, data_only=False)
    wanted = {
        ws.title: [c.coordinate for row in ws.iter_rows() for c in row if _is_formula(c.value)]
        for ws in wb.worksheets
    }
    values: dict[str, dict[str, Any]] = {}
    if not any(wanted.values()):
        return values
    solution = formulas.ExcelModel().loads(book).finish().calculate()
    prefix = f"'[{Path(book).name}]".upper()
    by_key = {str(k).upper(): v for k, v in solution.items()}
    for title, cells in wanted.items():
        for cell in cells:
            ranges = by_key.get(f"{prefix}{title.upper()}'!{cell}")
            if ranges is None:
                continue
            try:
                values.setdefault(title, {})[cell] = _plain(ranges.value[0][0])
            except (AttributeError, IndexError, TypeError):
                continue
    return values


def main(out: str, books: list[str]) -> int:
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for book in books:
        try:
            result[Path(book).name] = book_values(book)
        except Exception:  # one book the engine cannot read must not lose the others' values
            result[Path(book).name] = {}
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
