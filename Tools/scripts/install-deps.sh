#!/bin/sh
# Installs what the build and tests need when it is missing: libcurl headers (Debian
# libcurl4-openssl-dev), SQLite headers, shellcheck (make check-apple), Python's jsonschema, and
# Python's pyyaml and openapi-schema-validator (make validate-openapi);
# with --browser also Debian's chromium and chromium-driver and Python's selenium (the
# collector's browser test). Safe to run repeatedly: nothing is installed when everything is
# there. `apt-get update` runs first whenever something is missing.
set -e
browser=""
[ "${1:-}" = "--browser" ] && browser=1
need_apt=""
[ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -f /usr/include/curl/curl.h ] || [ -f /usr/include/aarch64-linux-gnu/curl/curl.h ] || need_apt="$need_apt libcurl4-openssl-dev"
[ -f /usr/include/sqlite3.h ] || need_apt="$need_apt libsqlite3-dev"
command -v openssl >/dev/null 2>&1 || need_apt="$need_apt openssl"
command -v shellcheck >/dev/null 2>&1 || need_apt="$need_apt shellcheck"
if [ -n "$browser" ]; then
  command -v chromium >/dev/null 2>&1 || need_apt="$need_apt chromium"
  command -v chromedriver >/dev/null 2>&1 || need_apt="$need_apt chromium-driver"
fi
if [ -n "$need_apt" ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing:$need_apt"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need_apt >/dev/null
fi
PY=${PYTHON:-python3}
# import name:PyPI name
modules="jsonschema:jsonschema yaml:pyyaml openapi_schema_validator:openapi-schema-validator"
[ -n "$browser" ] && modules="$modules selenium:selenium"
for pair in $modules; do
  module=${pair%%:*}
  package=${pair#*:}
  if ! $PY -c "import $module" >/dev/null 2>&1; then
    echo "installing: $package (pip)"
    $PY -m pip install -q "$package" || $PY -m pip install -q --break-system-packages "$package"
  fi
done
