#!/bin/sh
# Installs what the build and tests need when it is missing: libcurl headers (Debian
# libcurl4-openssl-dev), SQLite headers, and Python's jsonschema. Safe to run repeatedly.
set -e
need_apt=""
[ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -f /usr/include/curl/curl.h ] || [ -f /usr/include/aarch64-linux-gnu/curl/curl.h ] || need_apt="$need_apt libcurl4-openssl-dev"
[ -f /usr/include/sqlite3.h ] || need_apt="$need_apt libsqlite3-dev"
command -v openssl >/dev/null 2>&1 || need_apt="$need_apt openssl"
if [ -n "$need_apt" ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing:$need_apt"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need_apt >/dev/null
fi
PY=${PYTHON:-python3}
if ! $PY -c "import jsonschema" >/dev/null 2>&1; then
  echo "installing: jsonschema (pip)"
  $PY -m pip install -q jsonschema || $PY -m pip install -q --break-system-packages jsonschema
fi
