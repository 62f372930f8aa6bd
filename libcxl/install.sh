#!/bin/sh
# Installs libcxl's API over accelhost into a prefix; `--help` says how.
exec sh "$(dirname "$0")/../scripts/install-door.sh" libcxl "$@"
