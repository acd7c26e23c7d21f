"""Running model-written spreadsheet code safely, recalculating workbooks, and comparing them cell by cell.

The code is untrusted: it runs in its own process group, in a fresh temporary folder, with an environment
that carries nothing of the caller's (no API keys, no home), CPU and memory limits, and a wall-clock time
limit after which the whole process group is killed. Recalculation (LibreOffice, or the `formulas` engine)
runs the same way, since the formulas it computes may be the model's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula

from skillopt_lib.envs.scoring import cells_match, parse_answer_position, range_cells
from skillopt_lib.errors import ConfigError

# Variables a Python program needs to start and print text; nothing else crosses into the sandbox.
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")
MAX_MEMORY_BYTES = 2 * 1024**3
MAX_OUTPUT_CHARS = 2000
RECALC_TIMEOUT_S = 60.0  # per workbook; LibreOffice's start-up comes on top
_RECALC_SCRIPT = Path(__file__).with_name("recalc.py")


@dataclass
class SolutionRun:
    ok: bool
    output: Path | None
    error: str = ""
    stdout: str = ""
    workdir: Path | None = None

    def cleanup(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def scrubbed_env(workdir: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in _SAFE_ENV if k in os.environ}
    env.update(
        {"HOME": str(workdir), "TMPDIR": str(workdir), "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    )
    return env


# Started instead of the program: applies CPU and memory limits inside the child, then runs the script as
# __main__ (or, `_EXEC`, replaces itself with another program). (A preexec_fn would do the same before
# exec, but is unsafe while rollout threads are running.)
_LIMITS = """
import os, runpy, sys
try:
    import resource
    cpu = int(float(sys.argv[1])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
except (ImportError, ValueError, OSError):
    pass
"""
_BOOTSTRAP = (
    _LIMITS
    + """
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
)
_EXEC = (
    _LIMITS
    + """
os.execv(sys.argv[3], sys.argv[3:])
"""
)


def _sandboxed(
    args: list[str], workdir: Path, timeout_s: float, *, bootstrap: str = _BOOTSTRAP
) -> tuple[int | None, str]:
    """Run `python <script> args...` (with `_EXEC`: the program `args[0]`) in `workdir` under the
    sandbox's limits: (exit status or None on timeout, the last output). Raises OSError when Python cannot
    be started."""
    limits = [str(timeout_s), str(MAX_MEMORY_BYTES)]
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", bootstrap, *limits, *args],
        cwd=workdir,
        env=scrubbed_env(workdir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return None, ""
    return proc.returncode, out.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]


def _sandboxed_exec(command: list[str], workdir: Path, timeout_s: float) -> tuple[int | None, str]:
    return _sandboxed(command, workdir, timeout_s, bootstrap=_EXEC)


def run_solution(code: str, input_path: Path, *, timeout_s: float = 30.0) -> SolutionRun:
    """Run `code` as `python solution.py input.xlsx output.xlsx` in a fresh folder. Never raises for what
    the code does; the caller must `cleanup()` a successful run once it has read the output."""
    workdir = Path(tempfile.mkdtemp(prefix="skillopt-ssb-"))
    shutil.copyfile(input_path, workdir / "input.xlsx")
    (workdir / "solution.py").write_text(code, encoding="utf-8")
    output = workdir / "output.xlsx"
    try:
        status, text = _sandboxed(["solution.py", "input.xlsx", "output.xlsx"], workdir, timeout_s)
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        return SolutionRun(False, None, f"could not start Python: {exc}")
    if status is None:
        shutil.rmtree(workdir, ignore_errors=True)
        return SolutionRun(False, None, f"timed out after {timeout_s:g} s")
    if status != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        last = text.strip().splitlines()[-1] if text.strip() else f"exit status {status}"
        return SolutionRun(False, None, last, text)
    if not output.is_file():
        shutil.rmtree(workdir, ignore_errors=True)
        return SolutionRun(False, None, "the program did not write the output workbook", text)
    return SolutionRun(True, output, "", text, workdir)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.kill()


# ------------------------------------------------------------------------------------------ recalculation
#
# The official pipeline (`evaluation/open_spreadsheet.py` at RUCKBReasoning/SpreadsheetBench 425f5a9,
# 2026-02-21) opens every workbook with LibreOffice before comparing, `soffice --headless --calc
# --convert-to "xlsx:Calc MS Excel 2007 XML"`, and then reads the values LibreOffice cached. With its
# default settings LibreOffice keeps the value a file already caches for a formula and computes the formulas
# that have none (openpyxl never caches one), and every other value survives the round trip. So a workbook
# only changes under recalculation when a compared cell holds a formula without a cached value, and only
# such workbooks are recalculated here: by LibreOffice where `soffice` is installed, else by the `formulas`
# engine (`recalc.py`), both in the sandbox.

ENGINES = ("libreoffice", "formulas")
_CONVERT_FILTER = "xlsx:Calc MS Excel 2007 XML"
LIBREOFFICE_HINT = (
    "install LibreOffice Calc (Debian/Ubuntu: apt-get install libreoffice-calc-nogui), point "
    "env_options.soffice at its soffice program, or use env_options.recalc=formulas"
)
_CACHE_LIMIT = 4096

FormulaValues = dict[str, dict[str, Any]]  # {sheet title: {cell: value}} of a workbook's formula cells


def find_soffice(explicit: str | None = None) -> str | None:
    """LibreOffice's `soffice` program: `explicit` if it is one, else the first on PATH."""
    if explicit:
        path = Path(explicit).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which("soffice") or shutil.which("libreoffice")


def is_formula(value: Any) -> bool:
    """A cell value openpyxl read as a formula ('=SUM(A1:A3)', or an array formula)."""
    if isinstance(value, str):
        return value.startswith("=")
    return isinstance(value, ArrayFormula)


class Recalculation:
    """Computes the formulas of workbooks before they are compared, with one engine for a whole run.

    `engine` is `auto` (LibreOffice when `soffice` is found, else `formulas`), `libreoffice` or `formulas`.
    Values are remembered by the workbook's content, so an answer workbook is recalculated once per run.
    """

    def __init__(self, engine: str = "auto", soffice: str | None = None, timeout_s: float = RECALC_TIMEOUT_S):
        if engine not in ("auto", *ENGINES):
            raise ConfigError(
                f"spreadsheetbench recalc engine {engine!r} is unknown",
                hint="use auto, libreoffice or formulas",
            )
        found = find_soffice(soffice) if engine != "formulas" else None
        if engine == "libreoffice" and found is None:
            where = f"at {soffice}" if soffice else "on PATH"
            raise ConfigError(
                f"LibreOffice (soffice) was asked for but is not {where}", hint=LIBREOFFICE_HINT
            )
        if soffice and engine == "auto" and found is None:
            raise ConfigError(f"env_options.soffice names no program: {soffice}", hint=LIBREOFFICE_HINT)
        self.engine = "libreoffice" if found else "formulas"
        self.soffice = found
        self.timeout_s = timeout_s
        self._values: OrderedDict[str, FormulaValues] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # sent to Ray workers with the environment: the settings travel, the lock and the values do not
        return {"engine": self.engine, "soffice": self.soffice, "timeout_s": self.timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._values = OrderedDict()
        self._lock = threading.Lock()

    def formula_values(self, books: Sequence[Path]) -> dict[Path, FormulaValues]:
        """The recalculated values of the formula cells of each book (all of them in one sandboxed run).
        A book the engine cannot read gives {} (its formulas then have no value, as when the official
        conversion fails and the file is read as it is)."""
        keys = {book: self._key(book) for book in books}
        found: dict[str, FormulaValues] = {}
        with self._lock:
            for key in keys.values():
                if key in self._values:
                    found[key] = self._values[key]
        todo = list({key: book for book, key in keys.items() if key not in found}.values())
        if todo:
            computed = self._libreoffice(todo) if self.engine == "libreoffice" else self._formulas(todo)
            with self._lock:
                for book in todo:
                    found[keys[book]] = self._values[keys[book]] = computed.get(book, {})
                while len(self._values) > _CACHE_LIMIT:
                    self._values.popitem(last=False)
        return {book: found[key] for book, key in keys.items()}

    def _key(self, book: Path) -> str:
        return f"{self.engine}:{hashlib.sha256(book.read_bytes()).hexdigest()}"

    def _formulas(self, books: list[Path]) -> dict[Path, FormulaValues]:
        with _sandbox_dir("skillopt-ssb-calc-") as workdir:
            names = _copy_in(books, workdir)
            timeout = self.timeout_s * len(books)
            try:
                status, _ = _sandboxed([str(_RECALC_SCRIPT), "values.json", *names], workdir, timeout)
            except OSError:
                return {}
            out = workdir / "values.json"
            try:
                data = json.loads(out.read_text(encoding="utf-8")) if status == 0 else {}
            except (OSError, ValueError):
                data = {}
            return {book: data.get(name) or {} for book, name in zip(books, names, strict=True)}

    def _libreoffice(self, books: list[Path]) -> dict[Path, FormulaValues]:
        assert self.soffice is not None
        with _sandbox_dir("skillopt-ssb-lo-") as workdir:
            names = _copy_in(books, workdir)
            profile = (workdir / "profile").as_uri()
            command = [
                self.soffice, f"-env:UserInstallation={profile}", "--headless", "--norestore", "--calc",
                "--convert-to", _CONVERT_FILTER, "--outdir", "converted", *names,
            ]  # fmt: skip
            try:
                _sandboxed_exec(command, workdir, self.timeout_s + 20 * len(books))
            except OSError:
                return {}
            return {
                book: _converted_values(workdir / name, workdir / "converted" / name)
                for book, name in zip(books, names, strict=True)
            }


@contextmanager
def _sandbox_dir(prefix: str) -> Iterator[Path]:
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _copy_in(books: list[Path], workdir: Path) -> list[str]:
    names = [f"book{i}.xlsx" for i in range(len(books))]
    for book, name in zip(books, names, strict=True):
        shutil.copyfile(book, workdir / name)
    return names


def _converted_values(original: Path, converted: Path) -> FormulaValues:
    """What LibreOffice cached for the formula cells of `original`, read from its converted copy."""
    if not converted.is_file():
        return {}
    try:
        raw = openpyxl.load_workbook(original, data_only=False)
        done = openpyxl.load_workbook(converted, data_only=True)
    except Exception:  # a workbook LibreOffice could not write back
        return {}
    values: FormulaValues = {}
    for ws in raw.worksheets:
        if ws.title not in done.sheetnames:
            continue
        out = done[ws.title]
        for row in ws.iter_rows():
            for c in row:
                if is_formula(c.value):
                    values.setdefault(ws.title, {})[c.coordinate] = out[c.coordinate].value
    return values


def recalculate(book: Path, *, timeout_s: float = RECALC_TIMEOUT_S) -> FormulaValues:
    """The values of the formula cells of `book` computed by the `formulas` engine in the sandbox."""
    return Recalculation("formulas", timeout_s=timeout_s).formula_values([book])[book]


# ------------------------------------------------------------------------------------------ comparing
#
# `current` follows `evaluation/evaluation.py` at e2758ac (2025-10-09, the newest change): every range of
# `answer_position` is compared, by value only (the colour comparison added on 2025-10-08 was switched off
# the next day). `paper` follows the file released with the paper (aa92f06, 2024-06-24), which the paper's
# numbers were computed with: only the last range of `answer_position` is compared (the loop over ranges
# ends before the comparison), and fill and font colours must also match when the output's path contains
# "CF" (here: the task id).
SCORERS = ("current", "paper")


@dataclass
class _Book:
    """One workbook as the evaluation reads it: formulas and styles as saved, values as recalculated."""

    raw: Any
    cached: Any
    computed: dict[Path, FormulaValues] | None = None

    def needs(self, title: str, cell: str) -> bool:
        return is_formula(self.raw[title][cell].value) and self.cached[title][cell].value is None


def needs_recalculation(
    book: Path, answer_position: str, *, answer: Path | None = None, scorer: str = "current"
) -> bool:
    """Whether a compared cell of `book` holds a formula without a cached value (a range without a sheet
    is on the first sheet of `answer`, the answer workbook, or of `book` itself when it is the answer)."""
    try:
        wb = _Book(openpyxl.load_workbook(book), openpyxl.load_workbook(book, data_only=True))
        first = openpyxl.load_workbook(answer, read_only=True).sheetnames[0] if answer else None
    except Exception:  # a workbook that cannot be opened is reported when it is compared
        return False
    for _, title, cells in _compared(answer_position, first or wb.raw.sheetnames[0], scorer):
        if title in wb.raw.sheetnames and any(wb.needs(title, c) for c in cells):
            return True
    return False


def _compared(answer_position: str, first_sheet: str, scorer: str) -> list[tuple[str, str, list[str]]]:
    """(label for messages, sheet title, cells) of each compared range."""
    parts = parse_answer_position(answer_position)
    if scorer == "paper":
        parts = parts[-1:]
    return [
        (
            f"{sheet}!" if sheet is not None else "",
            sheet if sheet is not None else first_sheet,
            range_cells(rng),
        )
        for sheet, rng in parts
    ]


def _rgb_or_none(color: Any) -> Any:
    return color.rgb if color else None


def paper_colours_match(got: Any, want: Any) -> bool:
    """The paper release's colour rule: fill fore- and background `rgb` equal as openpyxl gives them (alpha
    included), and font colours equal, or both absent."""
    if _rgb_or_none(got.fill.fgColor) != _rgb_or_none(want.fill.fgColor):
        return False
    if _rgb_or_none(got.fill.bgColor) != _rgb_or_none(want.fill.bgColor):
        return False
    if got.font.color is None or want.font.color is None:
        return got.font.color is None and want.font.color is None
    return bool(got.font.color.rgb == want.font.color.rgb)


def compare_workbooks(
    output: Path,
    answer: Path,
    answer_position: str,
    *,
    recalc: Recalculation | None = None,
    scorer: str = "current",
    colours: bool = False,
) -> list[str]:
    """Mismatches between the answer cells of `output` and `answer` by the official evaluation's rules
    (`scorer`: `current` or `paper`; `colours`: also compare colours, as the paper release does for "CF"
    tasks), described without the expected values (the optimizer reads this, and must learn the task
    rather than the test's numbers).

    A range without a sheet name is on the answer workbook's first sheet, looked up by name in the output.
    A compared formula without a cached value, in either workbook, is recalculated first (`recalc`,
    LibreOffice where installed).
    """
    if scorer not in SCORERS:
        raise ValueError(f"unknown SpreadsheetBench scorer {scorer!r}; use one of {', '.join(SCORERS)}")
    try:
        got = _Book(openpyxl.load_workbook(output), openpyxl.load_workbook(output, data_only=True))
    except Exception as exc:  # a corrupt workbook written by the model
        return [f"the output workbook cannot be opened ({type(exc).__name__})"]
    want = _Book(openpyxl.load_workbook(answer), openpyxl.load_workbook(answer, data_only=True))
    recalc = recalc or Recalculation()
    books = {output: got, answer: want}
    problems: list[str] = []
    for label, title, cells in _compared(answer_position, want.raw.sheetnames[0], scorer):
        if title not in want.raw.sheetnames:  # the official evaluation fails the case, as here
            problems.append(f"sheet {title!r} named by the answer position is not in the answer workbook")
            continue
        if title not in got.raw.sheetnames:
            problems.append(f"sheet {title!r} is missing")
            continue
        for cell in cells:
            values = []
            for path, book in books.items():
                if book.needs(title, cell):
                    if book.computed is None:
                        book.computed = recalc.formula_values([path])
                    values.append(book.computed[path].get(title, {}).get(cell))
                else:
                    values.append(book.cached[title][cell].value)
            value, expected = values
            raw = got.raw[title][cell].value
            if not cells_match(value, expected):
                if got.needs(title, cell) and value is None:
                    problems.append(f"{label}{cell} holds a formula that could not be computed")
                elif value in (None, ""):
                    problems.append(f"{label}{cell} is empty")
                elif is_formula(raw):
                    problems.append(f"{label}{cell} = {_formula_text(raw)} gives {value!r}, which is wrong")
                else:
                    problems.append(f"{label}{cell} = {value!r} is wrong")
            elif colours and not paper_colours_match(got.raw[title][cell], want.raw[title][cell]):
                problems.append(f"{label}{cell} has the right value but the wrong fill or font colour")
    return problems


def _formula_text(value: Any) -> str:
    return value if isinstance(value, str) else str(getattr(value, "text", value))


def preview_workbook(path: Path, rows: int = 10) -> str:
    """The first rows of every sheet as tab-separated text, with cell coordinates the model can refer to."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    parts = []
    try:
        for ws in wb.worksheets:
            lines = [f"Sheet {ws.title!r}:"]
            for r, row in enumerate(ws.iter_rows(max_row=rows, values_only=False), 1):
                cells = [f"{c.coordinate}={c.value!r}" for c in row if getattr(c, "value", None) is not None]
                if cells:
                    lines.append(f"  row {r}: " + ", ".join(cells))
            parts.append("\n".join(lines))
    finally:
        wb.close()
    return "\n".join(parts)
