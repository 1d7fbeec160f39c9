# Sourced by the example scripts: where tfr-convert, tfr-inspect and their Python are.
# On PATH, else in this repository's .venv (the Quickstart's), else one line saying how.
here=$(cd "$(dirname "$0")/.." && pwd)
find_tool() {
  if command -v "$1" > /dev/null; then
    command -v "$1"
  elif [ -x "$here/.venv/bin/$1" ]; then
    echo "$here/.venv/bin/$1"
  else
    echo "$0: $1 not found: activate the venv (source .venv/bin/activate) or pip install tfr-convert" >&2
    return 127
  fi
}
tfr_convert=$(find_tool tfr-convert) || exit 127
tfr_inspect=$(find_tool tfr-inspect) || exit 127
python=${PYTHON:-$(dirname "$tfr_convert")/python}
[ -x "$python" ] || python=python3
