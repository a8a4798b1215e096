#!/bin/sh
# Installs what examples/rq needs, only if it is missing: Debian's python3-rq (RQ
# 1.13.0, with the rq command and python3-redis) for the system Python
# (/usr/bin/python3). Idempotent: fast when all is there.
set -eu

if [ -x /usr/bin/rq ] && /usr/bin/python3 -c 'import rq, redis' 2>/dev/null; then
	exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
# No service may start during the install (policy-rc.d exit 101), as in a
# container; a policy-rc.d already there is left as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	$SUDO sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-rq python3-redis
/usr/bin/python3 -c 'import rq; print("rq", rq.__version__)'
