#!/usr/bin/env bash
# Starts munged if no working munged answers (idempotent). Root only.
set -euo pipefail
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	exit 0
fi
if ((EUID != 0)); then
	echo "munge-up: munged is not running and this is not root" >&2
	exit 1
fi
if [[ ! -s /etc/munge/munge.key ]]; then
	# Debian's package creates the key on install; make one if it is missing.
	mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
		dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
	chown munge:munge /etc/munge/munge.key
	chmod 400 /etc/munge/munge.key
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
runuser -u munge -- /usr/sbin/munged
for _ in $(seq 50); do
	munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && exit 0
	sleep 0.1
done
echo "munge-up: munged did not answer within 5 s" >&2
exit 1
