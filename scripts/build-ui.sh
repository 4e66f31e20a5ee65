#!/usr/bin/env bash
# Build the web UI (ui/) into src/streamsift/ui/static/ with the locked npm packages.
# `npm ci` runs only when package-lock.json changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../ui"
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing nodejs and npm (to build the UI) ..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "npm (Node 20+) is needed to build the UI: install Node.js, then run make setup again." >&2
    exit 1
  fi
fi
lock=$(sha1sum package-lock.json | cut -c1-12)
if [ ! -f "node_modules/.ci-$lock" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch "node_modules/.ci-$lock"
fi
npm run build --silent
