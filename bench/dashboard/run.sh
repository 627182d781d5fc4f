#!/bin/sh
# run.sh BUILD_DIR: the dashboard's costs (dashboard.py): first load, a jobs page of 10,000
# jobs, a 1,000-trial study, each beside its baseline or goal.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=python3; fi
[ $# -gt 0 ] || set -- build
exec "$py" "$here/dashboard.py" "$@"
