#!/usr/bin/env bash
# Runs a subset of the suite (the binding, the run-file readers and writers, the CLI) against the wheel
# built for another CPython: installed (not editable) into a fresh environment of that interpreter,
# with the test tools and the wheel's own requirements from PyPI, no Rust toolchain on PATH.
#
#   scripts/test-python.sh PYTHON WHEEL_DIR [pytest arguments...]
set -euo pipefail

python="$1"
wheel_dir="$2"
shift 2
tag="$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
version="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
wheels=("$wheel_dir"/fanfuse-*-"$tag"-*.whl)
if [ "${#wheels[@]}" != 1 ] || [ ! -f "${wheels[0]}" ]; then
    echo "test-python: expected one $tag fanfuse wheel in $wheel_dir, found: ${wheels[*]}" >&2
    exit 2
fi

venv=".venv-py$version"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The wheel with the extras its tests read (Parquet runs, data frames), and the test tools of the dev extra.
"$venv/bin/python" -m pip install --quiet "${wheels[0]}[arrow,frames]" \
    "pytest>=8" "pytest-xdist>=3.5" "pytest-timeout>=2.3" "pytest-benchmark>=4" "hypothesis>=6.100"

source "$(dirname "$0")/path-without-rust.sh"
path="$(path_without_rust)"

export FANFUSE_TEST_INSTALLED_WHEEL="$(basename "${wheels[0]}")"
# Under CI=true, the property tests' example budget of tests/conftest.py's "other-python" profile.
if [ "${CI:-}" = true ] && [ -z "${FANFUSE_HYPOTHESIS_PROFILE:-}" ]; then
    export FANFUSE_HYPOTHESIS_PROFILE=other-python
fi
unset VIRTUAL_ENV PYO3_PYTHON
PATH="$venv/bin:$path" exec "$venv/bin/python" -m pytest "$@"
