#!/usr/bin/env bash
# Spark needs Java 17+. Install Debian's OpenJDK 17 when it is missing and we are root.
set -euo pipefail
version() { java -version 2>&1 | sed -nE 's/.*version "([0-9]+)(\.([0-9]+))?.*/\1 \3/p' | head -1; }
if command -v java >/dev/null 2>&1; then
  read -r major minor <<<"$(version)"
  [ "${major:-0}" = "1" ] && major=${minor:-0}
  if [ "${major:-0}" -ge 17 ]; then exit 0; fi
  echo "Java ${major} found; Spark needs Java 17 or newer." >&2
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing openjdk-17-jre-headless ..." >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  exit 0
fi
echo "Java 17+ is needed: install it (e.g. 'sudo apt-get install openjdk-17-jre-headless') or set JAVA_HOME." >&2
exit 1
