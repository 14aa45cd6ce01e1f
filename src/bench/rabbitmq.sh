#!/usr/bin/env bash
# RabbitMQ as a benchmark peer, started by hand on loopback (no systemd here) and stopped by PID.
#   rabbitmq.sh start DIR   installs Debian's rabbitmq-server if missing, enables the AMQP 1.0 plugin offline,
#                           starts its own epmd on 127.0.0.1 and the broker on a free port, with its data,
#                           logs, cookie and plugin list under DIR; last line: "port=N pid=BEAM_PID epmd=N".
#   rabbitmq.sh stop DIR    stops the broker and its epmd by the PIDs recorded in DIR.
# On failure: exit non-zero with one line on stderr saying why. Not part of `npm test`.
set -u
cmd=${1:?usage: rabbitmq.sh start|stop DIR}
dir=${2:?usage: rabbitmq.sh start|stop DIR}
RMQ=/usr/lib/rabbitmq/bin

fail() { echo "$*" >&2; exit 1; }

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

stop() {
  # The Erlang VM stops cleanly on SIGTERM; give it 30 s, then SIGKILL. Only the PIDs we recorded.
  for f in beam.pid wrapper.pid epmd.pid; do
    pid=$(cat "$dir/$f" 2>/dev/null || true)
    if alive "$pid"; then
      kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 1 300); do alive "$pid" || break; sleep 0.1; done
      alive "$pid" && kill -KILL "$pid" 2>/dev/null
    fi
  done
  return 0
}

start() {
  mkdir -p "$dir/mnesia" "$dir/log" "$dir/home" || fail "cannot create $dir"
  if [ ! -x "$RMQ/rabbitmq-server" ]; then
    echo "rabbitmq: installing Debian's rabbitmq-server with apt" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server; } >"$dir/apt.log" 2>&1 \
      || fail "apt-get install rabbitmq-server failed (see $dir/apt.log)"
  fi
  command -v epmd >/dev/null || fail "epmd not found after installing rabbitmq-server"

  local port dist epmd_port
  port=$(free_port) && dist=$(free_port) && epmd_port=$(free_port) || fail "no free port"

  # Everything of this broker lives under $dir: the cookie (HOME), plugin list, data and logs.
  export HOME="$dir/home"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
  export RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log"
  export RABBITMQ_PID_FILE="$dir/beam.pid" RABBITMQ_CONFIG_FILE="$dir/rabbitmq"
  export RABBITMQ_NODENAME="peeklockbench@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT="$port" RABBITMQ_DIST_PORT="$dist"
  export ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$epmd_port"
  # Erlang distribution on loopback only.
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  : >"$dir/rabbitmq.conf"

  "$RMQ/rabbitmq-plugins" enable --offline rabbitmq_amqp1_0 >"$dir/plugins.log" 2>&1 \
    || fail "rabbitmq-plugins enable --offline rabbitmq_amqp1_0 failed (see $dir/plugins.log)"

  epmd -address 127.0.0.1 -port "$epmd_port" -daemon || fail "epmd would not start"
  # epmd -daemon forks; find ours by its port so stop() can end it by PID.
  for _ in $(seq 1 50); do
    epmd_pid=$(pgrep -f -x "epmd -address 127.0.0.1 -port $epmd_port -daemon" | head -1)
    [ -n "$epmd_pid" ] && break
    sleep 0.1
  done
  echo "${epmd_pid:-}" >"$dir/epmd.pid"

  setsid "$RMQ/rabbitmq-server" >"$dir/server.log" 2>&1 </dev/null &
  echo $! >"$dir/wrapper.pid"

  # Ready when the AMQP port accepts connections (the plugins start before the listener); at most 120 s.
  for _ in $(seq 1 1200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      beam=$(cat "$dir/beam.pid" 2>/dev/null || true)
      alive "$beam" || beam=$(cat "$dir/wrapper.pid")
      echo "port=$port pid=$beam epmd=$epmd_port"
      return 0
    fi
    alive "$(cat "$dir/wrapper.pid")" || { stop; fail "rabbitmq-server exited while starting (see $dir/server.log)"; }
    sleep 0.1
  done
  stop
  fail "rabbitmq-server did not listen on 127.0.0.1:$port within 120 s (see $dir/server.log)"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) fail "usage: rabbitmq.sh start|stop DIR" ;;
esac
