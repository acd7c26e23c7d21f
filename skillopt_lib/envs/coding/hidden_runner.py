"""Run one hidden test function against a workspace: `python hidden_runner.py TEST_FILE TEST_NAME`.

Used as a check command after the agent finished. It needs nothing but the standard library, so scoring does
not depend on which test tools the workspace or the user's Python has. The workspace (the current folder) is
put first on the import path, exactly as the visible tests see it. Exit status 0 means the test passed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: hidden_runner.py TEST_FILE TEST_NAME", file=sys.stderr)
        return 2
    path, name = argv[1], argv[2]
    sys.path.insert(0, os.getcwd())
    spec = importlib.util.spec_from_file_location("skillopt_hidden_test", path)
    if spec is None or spec.loader is None:
        print(f"cannot load {path}", file=sys.stderr)
        return 2
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        getattr(module, name)()
    except Exception:
        traceback.print_exc(limit=3)
        return 1
    print(f"{name} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
