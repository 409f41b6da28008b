#!/bin/sh
# setup_torch2.sh — a virtualenv with PyTorch 2.x from PyPI for the torch2
# part of bench/side_by_side.py (eager and torch.compile). Only the
# benchmark uses it: the build and the tests never do. Needs network
# access to PyPI (several GB: the PyPI wheels bring CUDA's libraries too)
# and python3-venv; safe to run twice.
#
#   bench/setup_torch2.sh [DIR]      default DIR: bench/.venv-torch2
set -eu
dir=${1:-$(dirname "$0")/.venv-torch2}
if ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
  apt-get install -y python3-venv
fi
[ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv "$dir"
"$dir/bin/python" -c 'import torch, numpy' 2>/dev/null || "$dir/bin/pip" install torch numpy
"$dir/bin/python" -c 'import torch; print("torch", torch.__version__, "in", "'"$dir"'")'
