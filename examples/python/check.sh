#!/usr/bin/env bash
# Interop check: the Python client's output equals `patience solve` on the same file.
#   examples/python/check.sh PATH/TO/patience DEAL_FILE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
patience=$(realpath "$1")
deals=$(realpath "$2")
work=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null || true; rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
mkdir -p "$here/gen"
"$work/venv/bin/python" -m grpc_tools.protoc -I "$here/../../proto" \
  --python_out="$here/gen" --grpc_python_out="$here/gen" patience/v1/patience.proto

RUST_LOG=info "$patience" serve --addr 127.0.0.1:0 --workers 2 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do
  addr=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$work/daemon.log" | head -1 | cut -d' ' -f3 || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { echo "the daemon did not start:"; cat "$work/daemon.log"; exit 1; }

"$work/venv/bin/python" "$here/patience_client.py" --addr "$addr" "$deals" >"$work/python.out"
"$patience" solve "$deals" >"$work/solve.out"
if cmp "$work/python.out" "$work/solve.out"; then
  echo "python client: 1 passed, 0 failed ($(wc -l <"$work/solve.out") deals identical to patience solve)"
else
  echo "python client: 0 passed, 1 failed (output differs from patience solve)"
  exit 1
fi
