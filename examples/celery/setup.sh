#!/bin/sh
# Installs what examples/celery needs, only if it is missing: Celery 5.2 and the
# Redis client for the system Python (/usr/bin/python3; Debian python3-celery
# brings kombu and billiard). Idempotent: fast when all is there.
set -eu

if /usr/bin/python3 -c 'import celery, kombu.transport.redis, redis' 2>/dev/null; then
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
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-celery python3-redis
/usr/bin/python3 -c 'import celery; print("celery", celery.__version__)'
