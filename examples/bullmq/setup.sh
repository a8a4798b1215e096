#!/bin/sh
# What CI calls before the BullMQ drills: node and npm (Debian's nodejs and npm,
# only if node is missing), then this folder's node_modules from package-lock.json
# (bullmq 5.81.5, pinned), skipped when it is already installed as locked.
# Idempotent; a second run takes about a second.
set -eu
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: node or npm is missing: as root, apt-get install nodejs npm" >&2
    exit 1
  fi
  # No service may start while packages install (a container has no init).
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends nodejs npm ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm; }
  [ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
fi

# npm ls fails on a missing or mismatched package: then install exactly the lock.
if [ -d node_modules ] && npm ls --silent >/dev/null 2>&1 &&
  node -e "process.exit(require('bullmq/package.json').version === '5.81.5' ? 0 : 1)" 2>/dev/null; then
  exit 0
fi
npm ci --no-audit --no-fund
