#!/usr/bin/env bash
# The UI tests drive Debian's chromium through Playwright (Playwright's own browser download
# is not used). Install it when it is missing and we are root.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium (for the UI tests) ..." >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "chromium is needed by the UI tests: install it (e.g. 'sudo apt-get install chromium')." >&2
exit 1
