#!/usr/bin/env bash
# superset.sh install|start|stop|status|import
#   install  own venv in $GRIDLAKE_SUPERSET_VENV from infra/superset-requirements.txt (a stamp holding
#            the file's hash skips the work when nothing changed)
#   start    install, secrets (generated once per instance), metadata DB in SQLite under
#            $GRIDLAKE_STATE/superset, admin user, then gunicorn on 127.0.0.1:$GRIDLAKE_SUPERSET_PORT
#            and the import of superset/assets (database, dataset, charts, dashboard "Grid operations")
#   import   build the bundle ZIP (Thrift port of this instance templated in) and import it through
#            POST /api/v1/assets/import/, which overwrites: safe to repeat
#   add-site-user SITE USER   role Site_<SITE> (read-only, row-level security on SITE) and its user
#   add-operator USER         a user with role GridOperator (reads everything, writes nothing)
#            password: $GRIDLAKE_USER_PASSWORD, else generated once into
#            $GRIDLAKE_STATE/secrets/superset_users/USER.txt (never on a command line)
#   stop     stop gunicorn (by its PID file)
#   status   one line
# Env overrides: SUPERSET_SECRET_KEY, SUPERSET_ADMIN_PASSWORD, GRIDLAKE_SUPERSET_ADMIN (user name),
# GRIDLAKE_SUPERSET_WORKERS (gunicorn workers, default 2), GRIDLAKE_SUPERSET_SCHEMA (database of the
# views the datasets read, default grid).
set -euo pipefail
source "$(dirname "$0")/env.sh"

VENV="$GRIDLAKE_SUPERSET_VENV"
REQS="$GRIDLAKE_REPO/infra/superset-requirements.txt"
HOME_DIR="$GRIDLAKE_STATE/superset"
SECRETS_DIR="$GRIDLAKE_STATE/secrets"
SECRETS="$SECRETS_DIR/superset.env"
ADMIN_FILE="$SECRETS_DIR/superset_admin.txt"
ADMIN_USER="${GRIDLAKE_SUPERSET_ADMIN:-admin}"
URL="http://127.0.0.1:$GRIDLAKE_SUPERSET_PORT"
BUNDLE="$HOME_DIR/gridlake_assets.zip"
VIEW_SCHEMA="${GRIDLAKE_SUPERSET_SCHEMA:-grid}"

export SUPERSET_HOME="$HOME_DIR"
export SUPERSET_CONFIG_PATH="$GRIDLAKE_REPO/superset/superset_config.py"
export FLASK_APP=superset
export PYTHONUNBUFFERED=1

# --- install -----------------------------------------------------------------------------------
install() {
  local stamp="$VENV/.gridlake-stamp" want t0=$SECONDS
  want="$(sha256sum "$REQS" | cut -c1-16)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  log "superset: installing the venv in $VENV (about 1.5 minutes)"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  # All pins, no resolution work: --no-deps keeps pip from re-resolving what the lock already holds.
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$REQS"
  "$VENV/bin/pip" check >/dev/null || { "$VENV/bin/pip" check; die "superset venv is inconsistent"; }
  echo "$want" > "$stamp"
  log "superset: venv ready in $((SECONDS - t0))s"
}

# --- secrets -----------------------------------------------------------------------------------
# $SECRETS holds SUPERSET_SECRET_KEY and SUPERSET_ADMIN_PASSWORD, generated once per instance;
# variables already set in the environment win over the file.
secret_from_file() { sed -n "s/^$1=//p" "$SECRETS" | head -n1; }

load_secrets() {
  local created=0 key pw pw_env="${SUPERSET_ADMIN_PASSWORD:-}"
  mkdir -p "$SECRETS_DIR"
  chmod 700 "$SECRETS_DIR"
  if [ ! -s "$SECRETS" ]; then
    (
      umask 077
      python3 - > "$SECRETS.tmp" <<'PY'
import secrets
print(f"SUPERSET_SECRET_KEY={secrets.token_urlsafe(48)}")
print(f"SUPERSET_ADMIN_PASSWORD={secrets.token_urlsafe(18)}")
PY
      mv "$SECRETS.tmp" "$SECRETS"
    )
    created=1
  fi
  chmod 600 "$SECRETS"
  key="${SUPERSET_SECRET_KEY:-$(secret_from_file SUPERSET_SECRET_KEY)}"
  pw="${SUPERSET_ADMIN_PASSWORD:-$(secret_from_file SUPERSET_ADMIN_PASSWORD)}"
  [ -n "$key" ] && [ -n "$pw" ] || die "superset: $SECRETS lacks a key or password"
  export SUPERSET_SECRET_KEY="$key" SUPERSET_ADMIN_PASSWORD="$pw" SUPERSET_ADMIN_USER="$ADMIN_USER"
  (
    umask 077
    printf 'user: %s\npassword: %s\nurl: %s/login/\n' "$ADMIN_USER" "$pw" "$URL" > "$ADMIN_FILE"
  )
  chmod 600 "$ADMIN_FILE"
  if [ "$created" = 1 ]; then
    log "superset: generated secrets in $SECRETS (login also in $ADMIN_FILE)"
    # The password itself is never printed (logs and terminals keep what they are shown).
    [ -n "$pw_env" ] || echo "superset admin login: user $ADMIN_USER, password in $ADMIN_FILE (mode 0600)"
  fi
}

# --- metadata DB, admin, roles ---------------------------------------------------------------
sset() { "$VENV/bin/superset" "$@" >> "$GRIDLAKE_LOGS/superset-setup.log" 2>&1 \
  || die "superset: 'superset $1' failed; see $GRIDLAKE_LOGS/superset-setup.log"; }
# spy SCRIPT: run a script with the Superset venv's python (the password travels in the environment).
spy() { "$VENV/bin/python" "$@" >> "$GRIDLAKE_LOGS/superset-setup.log" 2>&1 \
  || die "superset: '$1' failed; see $GRIDLAKE_LOGS/superset-setup.log"; }

# admin_state: prints "missing", or the stored password hash of the admin user.
admin_state() {
  "$VENV/bin/python" - "$HOME_DIR/superset.db" "$ADMIN_USER" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
row = con.execute("SELECT password FROM ab_user WHERE username = ?", (sys.argv[2],)).fetchone()
print(row[0] if row else "missing")
PY
}

# pw_matches HASH: the admin password in the environment matches the stored werkzeug hash.
pw_matches() {
  "$VENV/bin/python" -c 'import os, sys
from werkzeug.security import check_password_hash
sys.exit(0 if check_password_hash(sys.argv[1], os.environ["SUPERSET_ADMIN_PASSWORD"]) else 1)' "$1"
}

setup_metadata() {
  local stamp="$HOME_DIR/.gridlake-init" want
  mkdir -p "$HOME_DIR"
  # Migrations and roles change only with Superset's version or gridlake's config: a stamp of both
  # lets warm restarts skip `db upgrade` and `init` (each boots the whole app, ~10 s).
  want="$(cat "$REQS" "$SUPERSET_CONFIG_PATH" | sha256sum | cut -c1-16)"
  if [ ! -f "$HOME_DIR/superset.db" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "superset: db upgrade"
    rm -f "$stamp"
    sset db upgrade
    ensure_admin
    log "superset: init (roles and permissions)"
    sset init
    echo "$want" > "$stamp"
  fi
  ensure_admin
}

# ensure_admin: create the admin user when missing; reset its password when the one in the
# environment (SUPERSET_ADMIN_PASSWORD) differs from the stored one.
ensure_admin() {
  local state
  state="$(admin_state)"
  if [ "$state" = missing ]; then
    log "superset: creating admin user '$ADMIN_USER'"
    SUPERSET_ADMIN_USER="$ADMIN_USER" spy "$GRIDLAKE_REPO/superset/ensure_admin.py"
  elif ! pw_matches "$state"; then
    log "superset: admin password changed (SUPERSET_ADMIN_PASSWORD): resetting it"
    SUPERSET_ADMIN_USER="$ADMIN_USER" spy "$GRIDLAKE_REPO/superset/ensure_admin.py"
  fi
}

# --- server ------------------------------------------------------------------------------------
healthy() { curl -fsS -m 5 -o /dev/null "$URL/health" 2>/dev/null; }

wait_healthy() {
  local secs="$1"
  for _ in $(seq 1 "$secs"); do
    healthy && return 0
    pid_alive superset || die "superset exited during start-up; see $GRIDLAKE_LOGS/superset.log"
    sleep 1
  done
  die "superset: no answer on $URL/health within ${secs}s; see $GRIDLAKE_LOGS/superset.log"
}

do_import() {
  pid_alive superset && healthy || die "superset is not running: run infra/superset.sh start"
  local t0=$SECONDS
  # Superset's login to the Thrift Server (user superset: grid views and gold tables, reads only)
  THRIFT_PW="$GRIDLAKE_STATE/secrets/thrift_users/superset.password"
  [ -f "$THRIFT_PW" ] || "$GRIDLAKE_VENV/bin/python" -m gridlake.serving.thrift_auth ensure
  "$VENV/bin/python" "$GRIDLAKE_REPO/superset/build_bundle.py" \
    --thrift-port "$GRIDLAKE_THRIFT_PORT" --schema "$VIEW_SCHEMA" --out "$BUNDLE" \
    --import-url "$URL" --user "$ADMIN_USER" --thrift-password-file "$THRIFT_PW" \
    || die "superset: import of $BUNDLE failed; see $GRIDLAKE_LOGS/superset.log"
  log "superset: assets imported in $((SECONDS - t0))s (database -> hive://superset@127.0.0.1:$GRIDLAKE_THRIFT_PORT/$VIEW_SCHEMA, password from $THRIFT_PW)"
  # new datasets reach the GridOperator and site roles (permissions and RLS rules)
  spy "$GRIDLAKE_REPO/superset/access.py" sync
  log "superset: roles GridOperator and Site_* in sync with the datasets"
}

# add_user KIND ARGS...: add-site-user SITE USER | add-operator USER (see the header).
add_user() {
  local kind="$1" user pw pwfile out dir="$SECRETS_DIR/superset_users"
  shift
  user="${!#}"
  [[ "$user" =~ ^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$ ]] || die "superset: not a user name: '$user'"
  pid_alive superset && healthy || die "superset is not running: run infra/superset.sh start"
  mkdir -p "$dir" && chmod 700 "$dir"
  pwfile="$dir/$user.txt"
  if [ -n "${GRIDLAKE_USER_PASSWORD:-}" ]; then
    pw="$GRIDLAKE_USER_PASSWORD"
  elif [ -s "$pwfile" ]; then
    pw="$(sed -n 's/^password: //p' "$pwfile" | head -n1)"
  else
    pw="$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')"
  fi
  [ -n "$pw" ] || die "superset: no password for $user"
  out="$(GRIDLAKE_USER_PASSWORD="$pw" "$VENV/bin/python" "$GRIDLAKE_REPO/superset/access.py" \
    "$kind" "$@" 2>>"$GRIDLAKE_LOGS/superset-setup.log")" \
    || die "superset: $kind failed: $(tail -n 1 "$GRIDLAKE_LOGS/superset-setup.log")"
  printf '%s\n' "$out" | tail -n 1
  (
    umask 077
    printf 'user: %s\npassword: %s\nurl: %s/login/\n' "$user" "$pw" "$URL" > "$pwfile"
  )
  chmod 600 "$pwfile"
  log "superset: login of $user in $pwfile"
}

start() {
  local t0=$SECONDS
  install
  load_secrets
  if pid_alive superset; then
    log "superset: already running"
    wait_healthy 120
  else
    # Something else on the port (another Superset, a leftover) would answer /health for us.
    if (exec 3<>"/dev/tcp/127.0.0.1/$GRIDLAKE_SUPERSET_PORT") 2>/dev/null; then
      die "superset: 127.0.0.1:$GRIDLAKE_SUPERSET_PORT is already in use by another process"
    fi
    setup_metadata
    local workers="${GRIDLAKE_SUPERSET_WORKERS:-2}"
    # The server needs the secret key, not the admin password.
    start_bg superset "$GRIDLAKE_LOGS/superset.log" env -u SUPERSET_ADMIN_PASSWORD "$VENV/bin/gunicorn" \
      --bind "127.0.0.1:$GRIDLAKE_SUPERSET_PORT" --workers "$workers" --worker-class gthread \
      --threads 4 --timeout 120 --graceful-timeout 10 --limit-request-line 0 \
      --limit-request-field_size 0 "superset.app:create_app()"
    wait_healthy 180
    log "superset: up on $URL in $((SECONDS - t0))s"
  fi
  do_import
}

case "${1:-status}" in
  install) install ;;
  start) start ;;
  import) load_secrets; do_import ;;
  add-site-user)
    [ "$#" = 3 ] || die "usage: superset.sh add-site-user SITE USER"
    load_secrets; add_user add-site-user "$2" "$3" ;;
  add-operator)
    [ "$#" = 2 ] || die "usage: superset.sh add-operator USER"
    load_secrets; add_user add-operator "$2" ;;
  stop) stop_pid superset ;;
  status)
    if pid_alive superset; then
      echo "superset  running  pid $(cat "$GRIDLAKE_RUN/superset.pid")  $URL"
    else
      echo "superset  stopped"
    fi
    ;;
  *) die "usage: superset.sh install|start|stop|status|import|add-site-user SITE USER|add-operator USER" ;;
esac
