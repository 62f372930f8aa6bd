#!/bin/sh
# Installs XRT's native API over accelhost into a prefix; `--help` says how.
exec sh "$(dirname "$0")/../scripts/install-door.sh" xrt "$@"
