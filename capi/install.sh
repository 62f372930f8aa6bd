#!/bin/sh
# Installs accelhost's OPAE-compatible C API into a prefix; `--help` says how.
exec sh "$(dirname "$0")/../scripts/install-door.sh" opae "$@"
