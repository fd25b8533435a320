#!/usr/bin/env bash
# Copy the browser-side npm packages (uPlot, asciinema-player) into the scoreboard's static folder.
#
# Usage: scripts/build-web-assets.sh [NODE_MODULES_DIR [DEST_DIR]]
#   defaults: web/node_modules and src/palaestra/scoreboard/server/static/vendor/
# Run after `npm ci --prefix web`. The destination is git-ignored: vendor code is never committed, it
# is installed from web/package-lock.json. Without it the server still serves every page, with a note
# that charts and terminal players are unavailable. The copy is swapped in whole, never half-written.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
modules="${1:-$root/web/node_modules}"
dest="${2:-$root/src/palaestra/scoreboard/server/static/vendor}"

# package/dist-file pairs: what the pages load (see palaestra/scoreboard/server/web/assets.py)
files=(
  "uplot/dist/uPlot.iife.min.js"
  "uplot/dist/uPlot.min.css"
  "uplot/LICENSE"
  "asciinema-player/dist/bundle/asciinema-player.min.js"
  "asciinema-player/dist/bundle/asciinema-player.css"
  "asciinema-player/LICENSE"
)

if [[ ! -d "$modules" ]]; then
  echo "build-web-assets: $modules is missing; run 'npm ci --prefix web' first" >&2
  exit 1
fi

mkdir -p "$(dirname "$dest")"
tmp="$(mktemp -d "$(dirname "$dest")/.vendor.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for f in "${files[@]}"; do
  src="$modules/$f"
  if [[ ! -f "$src" ]]; then
    echo "build-web-assets: $src is missing; is web/package-lock.json installed ('npm ci --prefix web')?" >&2
    exit 1
  fi
  mkdir -p "$tmp/$(dirname "$f")"
  cp "$src" "$tmp/$f"
done
# versions, for the page footer and for debugging
node -e '
  const fs = require("fs"), path = require("path");
  const out = {};
  for (const p of ["uplot", "asciinema-player"]) {
    out[p] = JSON.parse(fs.readFileSync(path.join(process.argv[1], p, "package.json"))).version;
  }
  fs.writeFileSync(path.join(process.argv[2], "versions.json"), JSON.stringify(out, null, 1) + "\n");
' "$modules" "$tmp" 2>/dev/null || echo '{}' > "$tmp/versions.json"

# swap in atomically-ish: a half-copied vendor folder is never served
rm -rf "$dest.old"
[[ -d "$dest" ]] && mv "$dest" "$dest.old"
mv "$tmp" "$dest"
trap - EXIT
rm -rf "$dest.old"
echo "build-web-assets: copied ${#files[@]} files into ${dest#"$root"/}"
