"""The store opens without importing numpy, and a process that imports numpy afterwards (mining does)
still gets sqlite-utils' columns for numpy values: INTEGER for numpy's integers, REAL for its floats, as
sqlite-utils gives them when it imports numpy itself.

Run in a new process: this one has imported numpy long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from pathlib import Path
from skillopt_daemon.core.store import open_db

db = open_db(Path(sys.argv[1]))
before = "numpy" in sys.modules
import numpy as np

db["mined"].insert({"n": np.int64(3), "small": np.int8(1), "x": np.float32(0.5), "y": np.float64(2.5)})
db["unsigned"].insert({"u": np.uint16(7)})
print(json.dumps({
    "numpy_before": before,
    "mined": {c.name: c.type for c in db["mined"].columns},
    "unsigned": {c.name: c.type for c in db["unsigned"].columns},
}))
"""


def test_numpy_values_get_their_columns_though_the_store_opened_without_numpy(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "skillopt.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert out["numpy_before"] is False
    assert out["mined"] == {"n": "INTEGER", "small": "INTEGER", "x": "REAL", "y": "REAL"}
    assert out["unsigned"] == {"u": "INTEGER"}
