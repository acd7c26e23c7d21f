"""Running model-written spreadsheet code safely, and comparing workbooks cell by cell.

The code is untrusted: it runs in its own process group, in a fresh temporary folder, with an environment
that carries nothing of the caller's (no API keys, no home), CPU and memory limits, and a wall-clock time
limit after which the whole process group is killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt_lib.envs.scoring import normalize_cell, parse_answer_position, range_cells

# Variables a Python program needs to start and print text; nothing else crosses into the sandbox.
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")
MAX_MEMORY_BYTES = 2 * 1024**3
MAX_OUTPUT_CHARS = 2000


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


def run_solution(code: str, input_path: Path, *, timeout_s: float = 30.0) -> SolutionRun:
    """Run `code` as `python solution.py input.xlsx output.xlsx` in a fresh folder. Never raises for what
    the code does; the caller must `cleanup()` a successful run once it has read the output."""
    workdir = Path(tempfile.mkdtemp(prefix="skillopt-ssb-"))
    shutil.copyfile(input_path, workdir / "input.xlsx")
    (workdir / "solution.py").write_text(code, encoding="utf-8")
    output = workdir / "output.xlsx"
    try:
        limits = [str(timeout_s), str(MAX_MEMORY_BYTES)]
        proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOTSTRAP, *limits, "solution.py", "input.xlsx", "output.xlsx"],
            cwd=workdir,
            env=scrubbed_env(workdir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        return SolutionRun(False, None, f"could not start Python: {exc}")
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        shutil.rmtree(workdir, ignore_errors=True)
        return SolutionRun(False, None, f"timed out after {timeout_s:g} s")
    text = out.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]
    if proc.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        last = text.strip().splitlines()[-1] if text.strip() else f"exit status {proc.returncode}"
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


def _sheet(wb: Any, name: str | None) -> Any:
    if name is None:
        return wb.worksheets[0]
    if name in wb.sheetnames:
        return wb[name]
    lowered = {s.lower(): s for s in wb.sheetnames}
    return wb[lowered[name.lower()]] if name.lower() in lowered else None


def compare_workbooks(output: Path, answer: Path, answer_position: str) -> list[str]:
    """Mismatches between the answer cells of `output` and `answer`, described without the expected
    values (the optimizer reads this, and must learn the task rather than the test's numbers)."""
    import openpyxl

    try:
        got_wb = openpyxl.load_workbook(output, data_only=False)
    except Exception as exc:  # a corrupt workbook written by the model
        return [f"the output workbook cannot be opened ({type(exc).__name__})"]
    want_wb = openpyxl.load_workbook(answer, data_only=True)
    problems: list[str] = []
    for sheet_name, rng in parse_answer_position(answer_position):
        want_ws = _sheet(want_wb, sheet_name)
        got_ws = _sheet(got_wb, sheet_name)
        label = f"{sheet_name}!" if sheet_name else ""
        if want_ws is None:
            continue
        if got_ws is None:
            problems.append(f"sheet {sheet_name!r} is missing")
            continue
        for cell in range_cells(rng):
            got = got_ws[cell].value
            want = want_ws[cell].value
            if isinstance(got, str) and got.startswith("=") and not (isinstance(want, str) and want == got):
                problems.append(f"{label}{cell} holds a formula, not a value")
            elif normalize_cell(got) != normalize_cell(want):
                problems.append(
                    f"{label}{cell} is empty" if got in (None, "") else f"{label}{cell} = {got!r} is wrong"
                )
    return problems


def preview_workbook(path: Path, rows: int = 10) -> str:
    """The first rows of every sheet as tab-separated text, with cell coordinates the model can refer to."""
    import openpyxl

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
