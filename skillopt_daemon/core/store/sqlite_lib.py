"""sqlite-utils without numpy at start: the store's commands (`skillopt status`, `diff`, `approve`) read a
few rows and should not pay for the mining stack.

sqlite-utils imports numpy (and pandas) when it is installed, only to add numpy's scalar types to the table
of Python types it maps to column types. Here it is imported with those two hidden (from the importing
thread only: another thread may be importing numpy for mining meanwhile), and that table is
replaced by one that adds numpy's (and pandas') types itself the first time it is asked for a type it does
not know while numpy (or pandas) is loaded: a process that mines (and so imports numpy) and then creates a
table from numpy values gets the same columns as with sqlite-utils' own import.

When numpy is already loaded there is nothing to save, and sqlite-utils is imported as it is.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

HIDDEN = ("numpy", "pandas")


def _numpy_types() -> dict[Any, str]:
    """The entries sqlite-utils adds for numpy and pandas at its import, for those of the two now loaded."""
    out: dict[Any, str] = {}
    np = sys.modules.get("numpy")
    if np is not None:
        for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
            out[getattr(np, name)] = "INTEGER"
        for name in ("float16", "float32", "float64"):
            out[getattr(np, name)] = "REAL"
    pd = sys.modules.get("pandas")
    if pd is not None and hasattr(pd, "Timestamp"):
        out[pd.Timestamp] = "TEXT"
    return out


class ColumnTypes(dict[Any, str]):
    """sqlite-utils' COLUMN_TYPE_MAPPING, completed with numpy's and pandas' types once they are loaded."""

    def _complete(self, key: Any) -> bool:
        """Whether adding the types of the numeric libraries now loaded made `key` known."""
        self.update(_numpy_types())
        return dict.__contains__(self, key)

    def __missing__(self, key: Any) -> str:
        if self._complete(key):
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or self._complete(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:  # completes the table first, as a lookup with [] does
            return dict.__getitem__(self, key)
        return default


class _Hidden:
    """An import finder for which numpy and pandas are not installed, for one thread only: another thread
    importing numpy meanwhile (a night's mining) gets it as usual."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in HIDDEN and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def load() -> Any:
    """The sqlite_utils module, imported without numpy and pandas unless one of them is already loaded."""
    if "sqlite_utils.db" in sys.modules or any(name in sys.modules for name in HIDDEN):
        import sqlite_utils

        return sqlite_utils
    hidden = _Hidden()
    sys.meta_path.insert(0, hidden)
    try:
        import sqlite_utils
        import sqlite_utils.db as db
    finally:
        sys.meta_path.remove(hidden)
    db.COLUMN_TYPE_MAPPING = ColumnTypes(db.COLUMN_TYPE_MAPPING)
    return sqlite_utils


if TYPE_CHECKING:
    import sqlite_utils as sqlite_utils
else:
    sqlite_utils = load()
