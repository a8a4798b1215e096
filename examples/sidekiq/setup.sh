#!/bin/sh
# Installs what examples/sidekiq needs, only if it is missing: Ruby and Debian's
# ruby-sidekiq (6.4.1, with the sidekiq command, redis-rb 4.8 and
# connection_pool). Idempotent: fast when all is there.
set -eu

if command -v sidekiq >/dev/null 2>&1 && ruby -e 'require "sidekiq"' 2>/dev/null; then
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
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ruby ruby-sidekiq
ruby -e 'require "sidekiq"; puts "sidekiq #{Sidekiq::VERSION}"'
