#!/bin/bash
# What the core and each extra cost on disk (README's Install section): the wheel this checkout builds,
# installed with constraints.txt into one fresh venv per extra; `du -sm` of the venv against an empty
# one, and the core's largest packages from their installed files. Needs PyPI; a few minutes per extra.
#   scripts/measure_install_sizes.sh [EXTRA ...]     (default: the core and every extra but models)
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$WORK/pip-cache} PIP_DISABLE_PIP_VERSION_CHECK=1
"$PY" -m pip wheel --no-deps -q -w "$WORK/wheel" . || exit 1
WHL=$(ls "$WORK"/wheel/*.whl)
"$PY" -m venv "$WORK/empty"
EMPTY=$(du -sm "$WORK/empty" | cut -f1)
echo "empty venv: $EMPTY MB ($("$PY" --version))"
EXTRAS=("$@")
[ ${#EXTRAS[@]} -eq 0 ] && EXTRAS=("" e5 langchain haystack llamaindex eval report serve elasticsearch aws secure)
for extra in "${EXTRAS[@]}"; do
  V=$WORK/venv
  rm -rf "$V" && "$PY" -m venv "$V"
  if "$V/bin/pip" install -q -c constraints.txt "opensearch-hybrid-adapter${extra:+[$extra]} @ file://$WHL" > "$WORK/pip.log" 2>&1; then
    SIZE=$(du -sm "$V" | cut -f1)
    echo "${extra:-core}: venv $SIZE MB, +$((SIZE - EMPTY)) MB over an empty venv"
    [ -n "$extra" ] && continue
    "$V/bin/python" - <<'PY'
import importlib.metadata as md
import os

rows = []
for dist in md.distributions():
    paths = [dist.locate_file(f) for f in dist.files or ()]
    rows.append((sum(os.path.getsize(p) for p in paths if os.path.isfile(p)), dist.metadata["Name"], dist.version))
for size, name, version in sorted(rows, reverse=True)[:12]:
    print(f"   {size / 1e6:7.1f} MB  {name} {version}")
PY
  else
    echo "${extra:-core}: install FAILED"; tail -3 "$WORK/pip.log"
  fi
done
