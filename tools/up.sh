#!/usr/bin/env bash
# Start the whole hosted setup in one command: nginx in front of two Context Lens replicas (+ PostgreSQL).
#
#   tools/build_image.sh          # once (and after every code change): the images
#   tools/up.sh                   # nginx on http://127.0.0.1:8640, replicas app1 and app2 behind it
#   tools/up.sh --db              # the same plus PostgreSQL; both replicas get CONTEXT_LENS_DB
#   tools/up.sh down              # stop and remove everything this script started (a --db volume stays)
#   tools/up.sh status            # the containers and their health
#
# Two networks, both created here: <prefix>-back (internal: no route out of the machine) holds the replicas and the
# database; nginx sits on it (named proxy there) and on <prefix>-front, whose one port is published on 127.0.0.1
# only. A replica's port is published nowhere: nothing but nginx and the database reach it, and it believes the
# client address nginx names (X-Real-IP) only on a connection from proxy. Each replica
# runs as a host would run it: non-root, read-only root file system with a tmpfs on /tmp, --memory 1.5g --cpus 2,
# restarted if it dies (not if it is stopped by hand).
#
# Environment: CL_PREFIX (context-lens: names of containers, networks and the volume), CL_PORT (8640),
# CL_BIND (127.0.0.1), IMAGE, NGINX_IMAGE, PG_IMAGE, CL_MEMORY (1.5g), CL_CPUS (2), CL_REPLICAS (2; nginx.conf
# names app1 and app2), CL_STATE (/var/cache/context-lens: where the database password is kept, mode 600).
set -euo pipefail
cd "$(dirname "$0")/.."

P="${CL_PREFIX:-context-lens}"
PORT="${CL_PORT:-8640}"
BIND="${CL_BIND:-127.0.0.1}"
IMAGE="${IMAGE:-context-lens:latest}"
NGINX_IMAGE="${NGINX_IMAGE:-context-lens-nginx:latest}"
PG_IMAGE="${PG_IMAGE:-context-lens-postgres:latest}"
MEMORY="${CL_MEMORY:-1.5g}"
CPUS="${CL_CPUS:-2}"
STATE="${CL_STATE:-/var/cache/context-lens}"
FRONT="$P-front"
BACK="$P-back"

down() {
  for c in "$P-nginx" "$P-app1" "$P-app2" "$P-db"; do
    docker rm -f "$c" >/dev/null 2>&1 || true
  done
  for n in "$FRONT" "$BACK"; do
    docker network rm "$n" >/dev/null 2>&1 || true
  done
}

status() {
  docker ps -a --filter "name=^/$P-" --format '{{.Names}}\t{{.Status}}\t{{.Ports}}'
}

wait_healthy() {  # name, seconds
  local name="$1" deadline=$((SECONDS + $2)) h
  while [ $SECONDS -lt "$deadline" ]; do
    h="$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$name" 2>/dev/null || echo missing)"
    case "$h" in
      healthy) return 0 ;;
      exited|dead|missing) echo "$name: $h" >&2; docker logs --tail 40 "$name" >&2 || true; return 1 ;;
    esac
    sleep 1
  done
  echo "$name: not healthy after $2 s" >&2
  docker logs --tail 40 "$name" >&2 || true
  return 1
}

db_url=""
start_db() {
  # built every time: Docker's layer cache makes an unchanged build a second, and a changed start script is used
  echo "== build $PG_IMAGE (PostgreSQL 15 from Debian)"
  DOCKER_BUILDKIT=0 docker build -q --force-rm --network host -t "$PG_IMAGE" -f deploy/postgres.Dockerfile deploy >/dev/null
  mkdir -p "$STATE"
  local pwfile="$STATE/$P-db-password"
  if [ ! -s "$pwfile" ]; then
    (umask 077; python3 -c "import secrets; print(secrets.token_urlsafe(24))" >"$pwfile")
  fi
  local pw
  pw="$(cat "$pwfile")"
  echo "== start $P-db (PostgreSQL on $BACK only; data in volume $P-pgdata)"
  docker run -d --name "$P-db" --network "$BACK" --network-alias db \
    --restart unless-stopped --memory 512m \
    -e POSTGRES_PASSWORD="$pw" -v "$P-pgdata:/var/lib/postgresql/data" \
    "$PG_IMAGE" >/dev/null
  wait_healthy "$P-db" 120
  db_url="postgresql+psycopg://context_lens:$pw@db:5432/context_lens"
}

start_replica() {  # n
  local n="$1"
  # nginx sets X-Real-IP to the address it saw; a replica believes it only on a connection from nginx (the name
  # proxy on the internal network), never from a request that went around it
  local env=(-e "CONTEXT_LENS_CLIENT_HEADER=X-Real-IP" -e "CONTEXT_LENS_PROXY_ADDRESSES=proxy")
  [ -n "$db_url" ] && env+=(-e "CONTEXT_LENS_DB=$db_url")
  docker run -d --name "$P-app$n" --network "$BACK" --network-alias "app$n" \
    --read-only --tmpfs /tmp:rw,size=256m,mode=1777 \
    --memory "$MEMORY" --cpus "$CPUS" --restart unless-stopped \
    "${env[@]}" "$IMAGE" >/dev/null
}

up() {
  local with_db=0
  for a in "$@"; do
    case "$a" in
      --db) with_db=1 ;;
      *) echo "unknown option: $a" >&2; exit 2 ;;
    esac
  done
  down
  docker network create "$FRONT" >/dev/null
  docker network create --internal "$BACK" >/dev/null
  [ "$with_db" = 1 ] && start_db
  echo "== start $P-app1, $P-app2 ($IMAGE, --memory $MEMORY --cpus $CPUS, read-only)"
  start_replica 1
  start_replica 2
  wait_healthy "$P-app1" 300
  wait_healthy "$P-app2" 300
  echo "== start $P-nginx on http://$BIND:$PORT"
  docker create --name "$P-nginx" --network "$FRONT" -p "$BIND:$PORT:8080" \
    --restart unless-stopped --memory 256m "$NGINX_IMAGE" >/dev/null
  docker network connect --alias proxy "$BACK" "$P-nginx"
  docker start "$P-nginx" >/dev/null
  local deadline=$((SECONDS + 30))
  until curl -fsS "http://$BIND:$PORT/_stcore/health" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      docker logs --tail 40 "$P-nginx" >&2
      echo "nginx does not answer on $BIND:$PORT" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "== up: http://$BIND:$PORT"
  status
}

case "${1:-up}" in
  down) down ;;
  status) status ;;
  up) shift || true; up "$@" ;;
  --*) up "$@" ;;
  *) echo "usage: tools/up.sh [up] [--db] | down | status" >&2; exit 2 ;;
esac
