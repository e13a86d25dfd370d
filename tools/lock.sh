#!/usr/bin/env bash
# Regenerate requirements.lock: every package a host installs, at an exact version, with its hashes.
#
#   bash tools/lock.sh                 # after changing requirements.txt; commit both files
#
# A host then installs exactly what was tested, and pip refuses any file whose hash differs:
#   pip install --require-hashes --no-deps -r requirements.lock \
#       --extra-index-url https://download.pytorch.org/whl/cpu
#
# The lock is for Linux x86-64 (manylinux 2.28) and Python 3.11, the Docker image's platform. torch is the
# CPU build (2.13.0+cpu, from PyTorch's CPU index; the Linux wheel on PyPI pulls several GB of CUDA libraries).
# TORCH_SOURCE names where that wheel is found: PyTorch's CPU index by default, or a folder of wheels
# (TORCH_SOURCE="--find-links /opt/wheels" on a machine that has it but cannot reach download.pytorch.org).
# The versions are those of the environment the tests ran in (``pip freeze`` as constraints), so the lock
# pins what was tested; run it where the tests pass. Needs uv (pip install uv==0.13.8, requirements-dev.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
tested=$(mktemp)
trap 'rm -f "$tested"' EXIT
python -m pip freeze --exclude-editable | grep -v -i -E '^(torch|uv)==' > "$tested"
TORCH_SOURCE=${TORCH_SOURCE:-"--extra-index-url https://download.pytorch.org/whl/cpu"}
# shellcheck disable=SC2086  # TORCH_SOURCE is an option and its value
uv pip compile requirements.txt \
    --generate-hashes \
    --python-version 3.11 \
    --python-platform x86_64-manylinux_2_28 \
    --index-url https://pypi.org/simple \
    $TORCH_SOURCE \
    --index-strategy unsafe-best-match \
    --override tools/lock-overrides.txt \
    --constraint "$tested" \
    --no-config \
    --custom-compile-command "bash tools/lock.sh" \
    --output-file requirements.lock
sed -i "s|-c $tested|-c pip freeze (the tested environment)|" requirements.lock
