#!/usr/bin/python3
"""run_cuda_golden.py - CUDA printer goldens: scheduled .kir in, .cu out.

    tests/backend/cuda/run_cuda_golden.py --tool build/tests/cuda_tool [--update] [FILTER...]

Each tests/backend/cuda/golden/NAME.kir starts with a line

    ; args: ARGS                       (cuda_tool's options, e.g. --host)

and is run as `cuda_tool ARGS tests/backend/cuda/golden/NAME.kir` from the
repository root; its stdout (the device source, with --host the host source
after it, or the refusal) must equal NAME.cu. `; expect: error` on the second
line says the exit status must be 1 (a refusal the case exists to show),
otherwise 0. --update rewrites the .cu files (never from a crash). The suite
runs in tests/run_golden.py (tool_main). Output:
[PASS]/[FAIL] per case and `N passed, N failed`; exit 1 when anything failed.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import run_golden  # noqa: E402  (tests/run_golden.py: tool_main runs the suite)

if __name__ == "__main__":
    sys.exit(run_golden.tool_main(__doc__.split("\n")[0], "tests/backend/cuda/golden", ".cu", REPO))
