#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs CMD beside a PostgreSQL server of its own: a new cluster in a temporary folder that
# listens only on a unix socket there, its URL in XSPROF_TEST_PG_URL. The server is stopped and
# the folder removed however CMD ends; every wait has a deadline (CMD's: $XSPROF_PG_CMD_TIMEOUT
# seconds, default 240). initdb refuses root, so as root the cluster belongs to the user
# postgres (or nobody). CMD's status is the script's; a server that does not start fails it
# (never a skip).
#
# Usage: tests/output/history/with_postgres.sh CMD [ARG...]   (ctest: test_history_store_pg)
set -uo pipefail

bin=
for d in /usr/local/bin /usr/lib/postgresql/*/bin; do
	if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then
		bin=$d
		break
	fi
done
if [[ -z $bin ]]; then
	echo "with_postgres: no initdb, pg_ctl and postgres: install postgresql-15 (scripts/deps.sh)" >&2
	exit 1
fi

dir=$(mktemp -d /tmp/xsprof-pg-XXXXXX) || exit 1
as=()
if [[ $(id -u) == 0 ]]; then
	user=postgres
	id -u "$user" >/dev/null 2>&1 || user=nobody
	chown "$user" "$dir" || exit 1
	as=(runuser -u "$user" --)
fi
chmod 755 "$dir"

# shellcheck disable=SC2317 # the EXIT trap calls it
stop() {
	local pid
	if [[ -f $dir/data/postmaster.pid ]]; then
		pid=$(head -1 "$dir/data/postmaster.pid")
		timeout 30 "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -t 20 -w stop \
			>/dev/null 2>&1 || kill -9 "$pid" 2>/dev/null
	fi
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 1' INT TERM HUP

if ! timeout 120 "${as[@]}" "$bin/initdb" -D "$dir/data" -U xsprof -A trust -E UTF8 \
	--locale=C --no-sync >"$dir/initdb.log" 2>&1; then
	echo "with_postgres: initdb failed:" >&2
	tail -20 "$dir/initdb.log" >&2
	exit 1
fi
# A socket in the folder only: no port to collide with another server; nothing kept on disk.
if ! timeout 60 "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
	-o "-c listen_addresses='' -k $dir -p 5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
	start >/dev/null 2>&1; then
	echo "with_postgres: the server did not start:" >&2
	tail -20 "$dir/server.log" >&2
	exit 1
fi

unset PGHOST PGPORT PGUSER PGDATABASE PGSERVICE PGPASSWORD PGOPTIONS
export XSPROF_TEST_PG_URL="postgresql://xsprof@/postgres?host=$dir&port=5432"
# Within ctest's 300 s, so that the trap still stops the server.
timeout "${XSPROF_PG_CMD_TIMEOUT:-240}" "$@"
exit $?
