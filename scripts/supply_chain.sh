#!/usr/bin/env bash
# The supply-chain check: cargo-deny's advisories, licenses, bans and sources (deny.toml) over
# Cargo.lock, offline, against a RustSec advisory database snapshot.
#
#   scripts/supply_chain.sh [ADVISORY_DB] [CARGO_DENY]
#
# ADVISORY_DB defaults to ../shared/advisory-db (a plain copy of github.com/rustsec/advisory-db);
# where it is missing the check says it is skipped, and how to run it, and exits 0. CARGO_DENY
# defaults to the cargo-deny on PATH. cargo-deny reads the database's HEAD commit for its date, so
# the snapshot (which has no history) is copied once into a git repository under target/tools/,
# committed with the snapshot's date, and copied again only when the snapshot changes.
set -euo pipefail
cd "$(dirname "$0")/.."

snapshot=${1:-../shared/advisory-db}
deny=${2:-cargo-deny}
if [ ! -d "$snapshot/crates" ]; then
  echo "supply chain: skipped, no advisory database at $snapshot"
  echo "  run it with a copy of github.com/rustsec/advisory-db: scripts/supply_chain.sh PATH/TO/advisory-db"
  exit 0
fi

# cargo-deny looks for the database at db-path/<name>-<hash of its URL> (deny.toml's db-path).
dbs=target/tools/advisory-dbs
db=$dbs/advisory-db-3157b0e258782691
stamp=$(cat "$snapshot/SNAPSHOT.md" 2>/dev/null || true)$(find "$snapshot/crates" -type f | wc -l)
if [ ! -d "$db/.git" ] || [ "$(cat "$dbs/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$db" && mkdir -p "$db"
  cp -R "$snapshot/." "$db/"
  # The snapshot's date where SNAPSHOT.md gives one (YYYY-MM-DD), else today's.
  date=$(grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2}' "$snapshot/SNAPSHOT.md" 2>/dev/null | head -n 1 || true)
  date=${date:-$(date -u +%Y-%m-%d)}T00:00:00Z
  (cd "$db" && git init -q && git add -A &&
    GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
      git -c user.name=snapshot -c user.email=snapshot@localhost -c commit.gpgsign=false \
      commit -q -m "advisory-db snapshot")
  echo "$stamp" >"$dbs/stamp"
fi

# The crate graph for every platform, from crates.io (which CI reaches); the database stays offline.
cargo metadata --format-version 1 --locked >target/tools/metadata.json
"$deny" --offline --metadata-path target/tools/metadata.json check --show-stats \
  advisories licenses bans sources
