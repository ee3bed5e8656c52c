#!/bin/sh
# prima's pod launcher (the prima Helm chart mounts it at /etc/prima/launch/launch.sh).
#
#   launch.sh leader ARGS...  the pod of rank 0: starts PRIMA_RANKS ranks of `prima ARGS...`
#                             with mpirun, PRIMA_RANKS_PER_POD on each of the PRIMA_PODS pods
#                             of its group (the other pods over ssh, PRIMA_SSH_PORT)
#   launch.sh worker          another pod of a multi-pod group: runs sshd for mpirun
#   launch.sh rank ARGS...    one rank (mpirun runs this): takes the GPU of its local rank
#                             when PRIMA_DEVICE is cuda, then execs prima
#   launch.sh fetch           init container: downloads PRIMA_MODEL_URL to PRIMA_MODEL_FILE
#
# The leader's pods are named as a LeaderWorkerSet names them: LWS_LEADER_ADDRESS is
# NAME-GROUP.SUBDOMAIN..., the workers NAME-GROUP-I.SUBDOMAIN... (I = 1..PRIMA_PODS-1).
# SIGTERM (the pod stops): the leader passes it to rank 0 alone, which drains its requests
# (--drain-timeout) and then releases the other ranks, so mpirun ends with status 0; mpirun
# itself is told to stop the job only if rank 0 has not ended it PRIMA_KILL_TIMEOUT_S later
# (mpirun given SIGTERM aborts every rank at once). A worker keeps its pod up while ranks run
# on it, up to PRIMA_KILL_TIMEOUT_S.
# PRIMA_LAUNCH_PRINT=1 prints the mpirun command instead of running it (and does not wait
# for the workers). POSIX sh: it runs under dash, bash and busybox.
set -eu

die() {
  echo "prima-launch: error: $*" >&2
  exit 1
}
log() { echo "prima-launch: $*" >&2; }

mode=${1:-}
[ $# -gt 0 ] && shift

ssh_dir=${PRIMA_SSH_DIR:-/tmp/prima-ssh}
ssh_key_src=${PRIMA_SSH_KEY:-/etc/prima/ssh/id_ecdsa}
ssh_port=${PRIMA_SSH_PORT:-2222}

# The group's private key, copied where ssh accepts its permissions.
ssh_key() {
  [ -r "$ssh_key_src" ] || die "the group's ssh key $ssh_key_src is missing (the chart's Secret)"
  mkdir -p "$ssh_dir"
  chmod 700 "$ssh_dir"
  cp "$ssh_key_src" "$ssh_dir/id"
  chmod 600 "$ssh_dir/id"
}

# Waits for process $1 (a child), through trapped signals; returns its exit status.
wait_child() {
  while :; do
    st=0
    wait "$1" || st=$?
    # A trapped signal interrupts wait (status > 128) while the child runs on.
    kill -0 "$1" 2>/dev/null || return "$st"
  done
}

# Whether a process named prima runs in this pod (a rank started over ssh).
ranks_running() {
  for c in /proc/[0-9]*/comm; do
    [ "$(cat "$c" 2>/dev/null)" = prima ] && return 0
  done
  return 1
}

ssh_opts() {
  echo "-p $ssh_port -i $ssh_dir/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" \
    "-o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=5"
}

case "$mode" in
rank)
  prima=$(command -v "${PRIMA_BINARY:-prima}") || die "no prima executable (${PRIMA_BINARY:-prima}) on PATH=$PATH"
  # Rank 0's pid (exec keeps it) for the leader's SIGTERM.
  if [ "${OMPI_COMM_WORLD_RANK:-}" = 0 ] && [ -n "${PRIMA_RANK0_PIDFILE:-}" ]; then
    echo $$ >"$PRIMA_RANK0_PIDFILE"
  fi
  if [ "${PRIMA_DEVICE:-cpu}" = cuda ]; then
    local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-}
    [ -n "$local_rank" ] || die "PRIMA_DEVICE=cuda but OMPI_COMM_WORLD_LOCAL_RANK is unset (not started by mpirun)"
    exec "$prima" "$@" --device "cuda:$local_rank"
  fi
  exec "$prima" "$@" --device cpu
  ;;

worker)
  command -v ssh-keygen >/dev/null || die "ssh-keygen is missing from the image (openssh-client)"
  sshd=$(command -v sshd || echo /usr/sbin/sshd)
  [ -x "$sshd" ] || die "sshd is missing from the image (openssh-server): a multi-pod replica needs it"
  ssh_key
  [ -f "$ssh_dir/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$ssh_dir/host_ed25519"
  ssh-keygen -y -f "$ssh_dir/id" >"$ssh_dir/authorized_keys"
  chmod 600 "$ssh_dir/authorized_keys"
  log "worker ${LWS_WORKER_INDEX:-?} of ${LWS_LEADER_ADDRESS:-?}: sshd on port $ssh_port"
  "$sshd" -D -e -f /dev/null -p "$ssh_port" -h "$ssh_dir/host_ed25519" \
    -o PidFile="$ssh_dir/sshd.pid" -o AuthorizedKeysFile="$ssh_dir/authorized_keys" \
    -o StrictModes=no -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
    -o UsePAM=no -o AllowTcpForwarding=no -o X11Forwarding=no -o PermitTTY=no \
    -o PrintMotd=no &
  sshd_pid=$!
  stopping=0
  trap 'stopping=1' TERM INT
  while [ "$stopping" = 0 ]; do
    st=0
    wait "$sshd_pid" || st=$?
    kill -0 "$sshd_pid" 2>/dev/null || die "sshd exited with status $st"
  done
  # The pod stops: let this pod's ranks finish while rank 0 drains.
  deadline=$(($(date +%s) + ${PRIMA_KILL_TIMEOUT_S:-40}))
  while ranks_running && [ "$(date +%s)" -lt "$deadline" ]; do sleep 1; done
  kill -TERM "$sshd_pid" 2>/dev/null || true
  exit 0
  ;;

leader)
  ranks=${PRIMA_RANKS:?PRIMA_RANKS is unset}
  per_pod=${PRIMA_RANKS_PER_POD:?PRIMA_RANKS_PER_POD is unset}
  pods=${PRIMA_PODS:-1}
  [ $((per_pod * pods)) -eq "$ranks" ] ||
    die "PRIMA_RANKS_PER_POD $per_pod x PRIMA_PODS $pods is not PRIMA_RANKS $ranks"
  [ $# -gt 0 ] || die "no prima arguments"
  print=${PRIMA_LAUNCH_PRINT:-0}

  # The rank command, then mpirun's options in front of it (POSIX sh has no arrays).
  PRIMA_RANK0_PIDFILE=${TMPDIR:-/tmp}/prima-rank0.pid
  export PRIMA_RANK0_PIDFILE
  env_names="PRIMA_DEVICE PRIMA_BINARY PRIMA_RANK0_PIDFILE PATH ${PRIMA_RANK_ENV:-}"
  [ -n "${LD_LIBRARY_PATH:-}" ] && env_names="$env_names LD_LIBRARY_PATH"
  : "${PRIMA_DEVICE:=cpu}" "${PRIMA_BINARY:=prima}"
  export PRIMA_DEVICE PRIMA_BINARY
  set -- /bin/sh "$0" rank "$@"
  for name in $env_names; do set -- -x "$name" "$@"; done

  if [ "$pods" -eq 1 ]; then
    hosts="localhost:$per_pod"
  else
    leader=${LWS_LEADER_ADDRESS:?LWS_LEADER_ADDRESS is unset: a multi-pod replica runs in a LeaderWorkerSet}
    first=${leader%%.*}
    domain=${leader#*.}
    [ "$domain" != "$leader" ] || die "LWS_LEADER_ADDRESS $leader has no domain"
    hosts="$first:$per_pod"
    i=1
    while [ "$i" -lt "$pods" ]; do
      hosts="$hosts,$first-$i.$domain:$per_pod"
      i=$((i + 1))
    done
    if [ "$print" != 1 ]; then
      command -v ssh >/dev/null || die "ssh is missing from the image (openssh-client): a multi-pod replica needs it"
      ssh_key
      # Wait for every other pod's sshd (the workers start with the leader).
      deadline=$(($(date +%s) + ${PRIMA_WORKER_WAIT_S:-600}))
      i=1
      while [ "$i" -lt "$pods" ]; do
        host="$first-$i.$domain"
        # shellcheck disable=SC2046
        until ssh $(ssh_opts) "$host" true 2>/dev/null; do
          [ "$(date +%s)" -lt "$deadline" ] ||
            die "pod $host (worker $i of $((pods - 1))) did not answer ssh on port $ssh_port within ${PRIMA_WORKER_WAIT_S:-600} s"
          sleep 2
        done
        i=$((i + 1))
      done
      log "all $pods pods of the group answer ssh"
    fi
    export OMPI_MCA_plm_rsh_agent=ssh
    OMPI_MCA_plm_rsh_args=$(ssh_opts)
    export OMPI_MCA_plm_rsh_args
    export OMPI_MCA_orte_keep_fqdn_hostnames=1
    export OMPI_MCA_plm_rsh_no_tree_spawn=1
  fi

  # shellcheck disable=SC2086
  set -- mpirun -np "$ranks" --host "$hosts" --map-by slot --bind-to none \
    ${PRIMA_MPI_EXTRA_ARGS:-} "$@"
  if [ "$(id -u)" = 0 ]; then
    shift
    set -- mpirun --allow-run-as-root "$@"
  fi
  if [ "$print" = 1 ]; then
    printf '%s\n' "$@"
    exit 0
  fi
  log "$ranks ranks, $per_pod per pod on $pods pod(s): $hosts"
  rm -f "$PRIMA_RANK0_PIDFILE"
  "$@" &
  mpirun_pid=$!
  timer_pid=
  # shellcheck disable=SC2317 # run by the trap
  on_term() {
    if [ -s "$PRIMA_RANK0_PIDFILE" ] && kill -TERM "$(cat "$PRIMA_RANK0_PIDFILE")" 2>/dev/null; then
      log "SIGTERM: rank 0 drains"
      if [ -z "$timer_pid" ]; then
        (
          trap 'kill "$!" 2>/dev/null; exit 0' TERM
          sleep "${PRIMA_KILL_TIMEOUT_S:-40}" &
          wait "$!"
          kill -TERM "$mpirun_pid" 2>/dev/null
        ) &
        timer_pid=$!
      fi
    else
      kill -TERM "$mpirun_pid" 2>/dev/null || true # rank 0 not started yet: stop the job
    fi
  }
  trap on_term TERM INT
  st=0
  wait_child "$mpirun_pid" || st=$?
  [ -z "$timer_pid" ] || kill "$timer_pid" 2>/dev/null || true
  exit "$st"
  ;;

fetch)
  url=${PRIMA_MODEL_URL:?PRIMA_MODEL_URL is unset}
  file=${PRIMA_MODEL_FILE:?PRIMA_MODEL_FILE is unset}
  if [ -s "$file" ]; then
    log "$file is present ($(wc -c <"$file") bytes): not downloaded again"
    exit 0
  fi
  log "downloading $url to $file"
  curl -fSL --retry 5 --retry-delay 5 --connect-timeout 30 -o "$file.part" "$url" ||
    die "downloading model.url $url failed"
  mv "$file.part" "$file"
  log "$file: $(wc -c <"$file") bytes"
  ;;

*)
  die "usage: launch.sh leader ARGS... | worker | rank ARGS... | fetch (got '${mode}')"
  ;;
esac
