"""Running model-written spreadsheet code safely, and comparing workbooks cell by cell.

The code is untrusted: it runs in its own process group, in a fresh temporary folder, with an environment
that carries nothing of the caller's (no API keys, no home), CPU and memory limits, and a wall-clock time
limit after which the whole process group is killed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl

from skillopt_lib.envs.scoring import cells_match, parse_answer_position, range_cells

# Variables a Python program needs to start and print text; nothing else crosses into the sandbox.
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")
MAX_MEMORY_BYTES = 2 * 1024**3
MAX_OUTPUT_CHARS = 2000
RECALC_TIMEOUT_S = 60.0
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


# Started instead of the solution: applies CPU and memory limits inside the child, then runs solution.py as
# __main__. (A preexec_fn would do the same before exec, but is unsafe while rollout threads are running.)
_BOOTSTRAP = """
import runpy, sys
try:
    import resource
    cpu = int(float(sys.argv[1])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
except (ImportError, ValueError, OSError):
    pass
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _sandboxed(args: list[str], workdir: Path, timeout_s: float) -> tuple[int | None, str]:
    """Run `python <script> args...` in `workdir` under the sandbox's limits: (exit status or None on
    timeout, the last output). Raises OSError when Python cannot be started."""
    limits = [str(timeout_s), str(MAX_MEMORY_BYTES)]
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", _BOOTSTRAP, *limits, *args],
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


def recalculate(book: Path, *, timeout_s: float = RECALC_TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """The values of the formula cells of `book` ({sheet title: {cell: value}}), computed by the `formulas`
    engine in the sandbox (the formulas are the model's). Cells it cannot compute are missing; a failed
    or timed-out run gives {}."""
    workdir = Path(tempfile.mkdtemp(prefix="skillopt-ssb-calc-"))
    try:
        shutil.copyfile(book, workdir / "book.xlsx")
        try:
            status, _text = _sandboxed([str(_RECALC_SCRIPT), "book.xlsx", "values.json"], workdir, timeout_s)
        except OSError:
            return {}
        values_file = workdir / "values.json"
        if status != 0 or not values_file.is_file():
            return {}
        data = json.loads(values_file.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.kill()


def _rgb(color: Any) -> str:
    rgb = getattr(color, "rgb", None) if color is not None else None
    return rgb[-6:] if isinstance(rgb, str) else "000000"


def colors_match(got: Any, want: Any) -> bool:
    """The official evaluation's colour rule: fill (fore- and background) and font colours agree in their
    RGB part; a theme or indexed colour counts as black, as there."""
    return (
        _rgb(got.fill.fgColor) == _rgb(want.fill.fgColor)
        and _rgb(got.fill.bgColor) == _rgb(want.fill.bgColor)
        and _rgb(got.font.color) == _rgb(want.font.color)
    )


def _is_formula(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=")


def compare_workbooks(
    output: Path, answer: Path, answer_position: str, *, recalc_timeout_s: float = RECALC_TIMEOUT_S
) -> list[str]:
    """Mismatches between the answer cells of `output` and `answer` by the official evaluation's rules,
    described without the expected values (the optimizer reads this, and must learn the task rather than
    the test's numbers).

    A range without a sheet name is on the answer workbook's first sheet, looked up by name in the output.
    Formulas in the output are recalculated (`recalculate`) before comparing; a formula the engine cannot
    compute falls back to the value cached in the file, if any, as the official evaluation reads files.
    """
    try:
        got_wb = openpyxl.load_workbook(output, data_only=False)
        cached_wb = openpyxl.load_workbook(output, data_only=True)
    except Exception as exc:  # a corrupt workbook written by the model
        return [f"the output workbook cannot be opened ({type(exc).__name__})"]
    want_wb = openpyxl.load_workbook(answer, data_only=True)
    computed: dict[str, dict[str, Any]] | None = None
    problems: list[str] = []
    for sheet_name, rng in parse_answer_position(answer_position):
        title = sheet_name if sheet_name is not None else want_wb.sheetnames[0]
        label = f"{sheet_name}!" if sheet_name else ""
        if title not in want_wb.sheetnames:  # the official evaluation fails the case, as here
            problems.append(f"sheet {title!r} named by the answer position is not in the answer workbook")
            continue
        if title not in got_wb.sheetnames:
            problems.append(f"sheet {title!r} is missing")
            continue
        want_ws, got_ws, cached_ws = want_wb[title], got_wb[title], cached_wb[title]
        for cell in range_cells(rng):
            raw = got_ws[cell].value
            got = raw
            if _is_formula(raw):
                if computed is None:
                    computed = recalculate(output, timeout_s=recalc_timeout_s)
                sheet_values = computed.get(title, {})
                if cell in sheet_values:
                    got = sheet_values[cell]
                elif cached_ws[cell].value is not None:
                    got = cached_ws[cell].value
                else:
                    problems.append(f"{label}{cell} holds a formula that could not be computed")
                    continue
            if not cells_match(got, want_ws[cell].value):
                if got in (None, ""):
                    problems.append(f"{label}{cell} is empty")
                elif _is_formula(raw):
                    problems.append(f"{label}{cell} = {raw} gives {got!r}, which is wrong")
                else:
                    problems.append(f"{label}{cell} = {got!r} is wrong")
            elif not colors_match(got_ws[cell], want_ws[cell]):
                problems.append(f"{label}{cell} has the right value but the wrong fill or font colour")
    return problems


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
