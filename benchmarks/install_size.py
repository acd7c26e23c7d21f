"""What a user's install weighs and how long it takes: `python -m benchmarks.install_size [--extras bench]`.

Creates a fresh venv with this interpreter, times `pip install .` (with the given extras, none by default),
and sums the files each installed distribution lists in its `RECORD` (the compiled `.pyc` files written
at install included; bytes, 1 MB = 10^6). The total is given with and without pip and setuptools: `pipx`
and `uv tool install` keep the installer out of the app's venv, so the figure without them is what a
user's install of the daemon holds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALLER = {"pip", "setuptools", "wheel"}

# Runs inside the new venv: every distribution's files, as its RECORD lists them, that exist on disk.
_SIZES = """
import json, os
from importlib.metadata import distributions
out = {}
for dist in distributions():
    total = 0
    for f in dist.files or []:
        path = dist.locate_file(f)
        if os.path.isfile(path):
            total += os.path.getsize(path)
    out[dist.metadata["Name"]] = out.get(dist.metadata["Name"], 0) + total
print(json.dumps(out))
"""


def measure(extras: str = "") -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="skillopt-install-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        target = f"{ROOT}[{extras}]" if extras else str(ROOT)
        t0 = time.perf_counter()
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", target],
            check=True,
        )
        seconds = time.perf_counter() - t0
        sizes = json.loads(
            subprocess.run([str(python), "-c", _SIZES], check=True, capture_output=True, text=True).stdout
        )
    mb = {name: round(size / 1e6, 1) for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])}
    total = sum(sizes.values()) / 1e6
    without = sum(v for k, v in sizes.items() if k.lower() not in INSTALLER) / 1e6
    return {
        "extras": extras or None,
        "install_s": round(seconds, 1),
        "total_mb": round(total, 1),
        "without_installer_mb": round(without, 1),
        "distributions": mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="", help="extras to install, e.g. bench")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = measure(args.extras)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"pip install {'.[' + args.extras + ']' if args.extras else '.'}: {result['install_s']} s")
    for name, size in result["distributions"].items():  # type: ignore[attr-defined]
        print(f"  {size:7.1f} MB  {name}")
    print(f"all distributions: {result['total_mb']} MB")
    print(
        f"without the installer (pip, setuptools), as pipx and uv install it: {result['without_installer_mb']} MB"
    )


if __name__ == "__main__":
    main()
