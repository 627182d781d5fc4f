#!/usr/bin/env bash
# install-web-deps.sh: install the dashboard's build tools and libraries (esbuild, Apache
# ECharts; exact versions in web/package-lock.json) into web/node_modules with `npm ci`, from
# the npm registry. Runs only when web/node_modules is missing or older than the lock file
# (a stamp inside node_modules records the lock it was installed from), so it is fast and
# changes nothing when called again. scripts/install-deps.sh calls it at its end.
set -euo pipefail

WEB="$(cd "$(dirname "${BASH_SOURCE[0]}")/../web" && pwd)"
LOCK="$WEB/package-lock.json"
STAMP="$WEB/node_modules/.trainyard-stamp"

if [ -f "$STAMP" ] && cmp -s "$LOCK" "$STAMP"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-web-deps: npm is missing (Debian: apt-get install nodejs npm); the dashboard cannot be built" >&2
  exit 1
fi
echo "install-web-deps: npm ci in $WEB" >&2
# --ignore-scripts: esbuild's postinstall only checks its binary, which npm installs as the
# optional package of this platform (@esbuild/linux-x64); no package needs to run code here.
(cd "$WEB" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
cp "$LOCK" "$STAMP"
