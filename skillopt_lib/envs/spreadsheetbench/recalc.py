"""Recalculate the formulas of a workbook and write their values as JSON (run inside the sandbox).

`python recalc.py BOOK.xlsx VALUES.json`: every cell of BOOK that holds a formula is computed with the
pure-Python `formulas` engine and written as {sheet title: {cell: value}}. Values are JSON numbers, text,
booleans or null; an Excel error is its text ('#DIV/0!'). A cell the engine cannot compute is left out, so
the caller scores it as a formula without a value.

This file is run as a script by `runner.recalculate` in the same scrubbed, time- and memory-limited
subprocess as the model's program, since the formulas it computes were written by the model. It imports
nothing from skillopt.
"""

from __future__ import annotations

import json
import sys
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


def main(book: str, out: str) -> int:
    # Imported here, in the sandboxed child only: `formulas` takes seconds to load.
    import formulas
    import openpyxl

    wb = openpyxl.load_workbook(book, data_only=False)
    wanted: dict[str, list[str]] = {}
    for ws in wb.worksheets:
        cells = [
            c.coordinate
            for row in ws.iter_rows()
            for c in row
            if isinstance(c.value, str) and c.value.startswith("=")
        ]
        if cells:
            wanted[ws.title] = cells
    values: dict[str, dict[str, Any]] = {}
    if wanted:
        model = formulas.ExcelModel().loads(book).finish()
        solution = model.calculate()
        prefix = f"'[{book.replace(chr(92), '/').rsplit('/', 1)[-1]}]".upper()
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
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(values, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
