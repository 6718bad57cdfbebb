#!/usr/bin/env bash
# Interop check: the Python client prints what `patience solve` prints on the same file, and exits
# with the same status. Its `error:` lines are `solve`'s without the "(line N)", with the server's
# message, which can word a deal's problem differently (a short pile is "the deal has 35 cards"
# there, "pile 9 has 3 cards" in `solve`): so error lines are compared up to "deal N:".
#   examples/python/check.sh PATH/TO/patience DEAL_FILE...
# It writes nothing into the checkout: the stubs, Python's bytecode and (unless PATIENCE_VENV names
# a venv with requirements.txt installed, as .ci/run's target/tools/venv) the venv all go into a
# temporary directory, removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
patience=$(realpath "$1")
shift
work=$(mktemp -d)
daemon=
trap 'if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
export PYTHONDONTWRITEBYTECODE=1

venv=${PATIENCE_VENV:-}
if [ -z "$venv" ] || ! "$venv/bin/python" -c 'import grpc, grpc_tools' 2>/dev/null; then
  venv=$work/venv
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi
mkdir -p "$work/gen"
"$venv/bin/python" -m grpc_tools.protoc -I "$here/../../proto" \
  --python_out="$work/gen" --grpc_python_out="$work/gen" patience/v1/patience.proto
# patience_client.py imports the stubs from here instead of its own gen/.
export PATIENCE_STUBS=$work/gen

RUST_LOG=info "$patience" serve --addr 127.0.0.1:0 --workers 2 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do
  addr=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$work/daemon.log" | head -1 | cut -d' ' -f3 || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "the daemon did not start:"; cat "$work/daemon.log"; exit 1; }

passed=0 failed=0
for file in "$@"; do
  deals=$(realpath "$file")
  python_status=0 solve_status=0
  "$venv/bin/python" "$here/patience_client.py" --addr "$addr" "$deals" >"$work/python.out" ||
    python_status=$?
  "$patience" solve "$deals" >"$work/solve.out" || solve_status=$?
  sed -E 's/^(error: .*: deal [0-9]+)( \(line [0-9]+\))?: .*/\1:/' "$work/solve.out" >"$work/solve.cmp"
  sed -E 's/^(error: .*: deal [0-9]+): .*/\1:/' "$work/python.out" >"$work/python.cmp"
  errors=$(grep -c '^error: ' "$work/solve.out" || true)
  if [ "$python_status" = "$solve_status" ] && cmp -s "$work/python.cmp" "$work/solve.cmp"; then
    echo "  $file: $(wc -l <"$work/solve.out") lines ($errors error lines) as patience solve, exit status $solve_status"
    passed=$((passed + 1))
  else
    echo "  $file: differs from patience solve (exit status $python_status, solve's $solve_status):"
    diff "$work/python.cmp" "$work/solve.cmp" | head -20 || true
    failed=$((failed + 1))
  fi
done
echo "python client: $passed passed, $failed failed"
[ "$failed" = 0 ]
