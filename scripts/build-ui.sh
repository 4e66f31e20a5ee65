#!/usr/bin/env bash
# Build the web UI (ui/) into src/streamsift/ui/static/ with the locked npm packages, its
# wire types generated from the API's OpenAPI document first (ui/openapi.json).
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
# The API's OpenAPI document, which `npm run build` generates the UI's wire types from
# (openapi-typescript: openapi.json -> src/api-schema.ts): rewritten from the Python
# package's models when it can be imported, else the checked-in copy is used.
py="${STREAMSIFT_PYTHON:-../.venv/bin/python}"
if [ -x "$py" ] && "$py" -c 'import streamsift.api.openapi_document' 2>/dev/null; then
  "$py" -m streamsift.api.openapi_document > openapi.json.new
  if cmp -s openapi.json.new openapi.json; then
    rm openapi.json.new
  else
    mv openapi.json.new openapi.json
    echo "ui/openapi.json: rewritten from the API's models (commit it with src/api-schema.ts)" >&2
  fi
else
  echo "note: no $py with streamsift installed: the UI's types come from ui/openapi.json as checked in" >&2
fi
npm run build --silent
