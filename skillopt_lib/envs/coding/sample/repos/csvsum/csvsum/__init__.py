"""Column totals for exported CSV reports."""

import csv
import io


def column_total(text: str, column: str) -> float:
    """Sum of a column of a CSV document with a header row; blank cells count as 0."""
    reader = csv.DictReader(io.StringIO(text))
    return sum(float(row[column]) for row in reader)
