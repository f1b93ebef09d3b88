#!/usr/bin/env bash
# CI: what `pip install workbench-magic` gives (no extras, so no pandas). Builds the wheel, checks it
# holds every file of the package (package data included), installs it into a fresh virtualenv
# (dependencies from the configured index), then runs `workbench-magic demo` and
# tests/plain_install.py (a call, the chart's MCP App, to_pandas()'s one-line error) there.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PY=${PY:-$root/.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The package as the working tree has it (tracked or new files, not ignored ones), built from a
# copy: no stale build/ directory can add to the wheel, and the tree gets no build/ or egg-info.
mapfile -d '' listed < <(git ls-files -z --cached --others --exclude-standard -- workbench_magic)
files=()
for f in "${listed[@]}"; do [[ -f $f ]] && files+=("$f"); done
mkdir "$tmp/src"
cp --parents pyproject.toml README.md "${files[@]}" "$tmp/src/"
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$tmp/dist" "$tmp/src"
wheels=("$tmp"/dist/workbench_magic-*.whl)
wheel=${wheels[0]}
printf '%s\n' "${files[@]}" >"$tmp/expected"
"$PY" - "$wheel" "$tmp/expected" <<'EOF'
import sys
import zipfile

names = set(zipfile.ZipFile(sys.argv[1]).namelist())
expected = set(open(sys.argv[2], encoding="utf-8").read().splitlines())
missing = sorted(expected - names)
if missing:
    sys.exit(f"the wheel lacks {', '.join(missing)}: see [tool.setuptools.package-data] in pyproject.toml")
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: all {len(expected)} files of the package")
EOF

"$PY" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet "$wheel"
if "$tmp/venv/bin/python" -c "import pandas" 2>/dev/null; then
    echo "plain install: pandas came with the wheel's dependencies" >&2
    exit 1
fi
# Away from the checkout (nothing of it on sys.path, no workbench-config.json): the embedded demo.
cp tests/plain_install.py "$tmp/"
cd "$tmp"
unset WORKBENCH_CONFIG PYTHONPATH
"$tmp/venv/bin/workbench-magic" demo
"$tmp/venv/bin/python" "$tmp/plain_install.py"
