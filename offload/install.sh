#!/bin/sh
# Installs LLVM's Offload API over accelhost into a prefix; `--help` says how.
exec sh "$(dirname "$0")/../scripts/install-door.sh" offload "$@"
