#!/usr/bin/python3
"""run_kir_golden.py - kernel-IR golden tests: .kir in, scheduled/planned .kir out.

    tests/kernel/run_kir_golden.py --tool build/tests/kir_tool [--update] [FILTER...]

Each tests/kernel/golden/NAME.kir starts with a line

    ; args: ARGS                       (kir_tool's options, e.g. --schedule --memplan)

and is run as `kir_tool ARGS tests/kernel/golden/NAME.kir` from the repository
root; its stdout (the programs after the passes, or the diagnostics of the
first stage that failed) must equal NAME.expected. The exit status must be 0
or 1; `; expect: error` on the second line says it must be 1 (a verifier or
parse error the case exists to show), otherwise it must be 0. --update
rewrites the .expected files (never from a crash). The suite runs in
tests/run_golden.py (tool_main). Output: [PASS]/[FAIL] per case
and `N passed, N failed`; exit 1 when anything failed.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import run_golden  # noqa: E402  (tests/run_golden.py: tool_main runs the suite)

if __name__ == "__main__":
    sys.exit(run_golden.tool_main(__doc__.split("\n")[0], "tests/kernel/golden", ".expected", REPO))
