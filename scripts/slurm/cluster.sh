#!/usr/bin/env bash
# A real one-node SLURM cluster on loopback, for tests and CI: Debian 12's slurm-wlm 22.05
# (slurmctld, slurmd) with a private munged. No slurmdbd/MariaDB: the Snakemake executor plugin
# reads job states from squeue (profiles/slurm sets status_command: squeue).
#
#   scripts/slurm/cluster.sh install   # apt-get the Debian packages (root; once per machine)
#   scripts/slurm/cluster.sh start     # configure this machine's node and start the daemons
#   scripts/slurm/cluster.sh status    # which daemons run; sinfo and squeue
#   scripts/slurm/cluster.sh stop      # cancel jobs, stop the daemons started by `start`
#   scripts/slurm/cluster.sh restart-slurmd   # stop and start slurmd, jobs left running (make rehearsal)
#
# Everything (slurm.conf, munge key and socket, spool, logs, pid files) lives in one machine-wide
# directory, $SPANAUG_SLURM_DIR (default /var/lib/spanaug-slurm): the cluster binds fixed ports
# (6817, 6818), so there is one per machine, whichever checkout started it. The only file outside
# it is the symlink /etc/slurm/slurm.conf, made by `start` and removed by `stop`: inside each job
# the executor plugin's jobstep drops all SLURM_* variables (SLURM_CONF too) before it calls srun,
# so srun has to find the config at the path compiled into Debian's SLURM. The machine's own munge
# (/etc/munge, /run/munge) is left alone. Daemons are started directly (containers have no
# systemd) and run as root.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${SPANAUG_SLURM_DIR:-/var/lib/spanaug-slurm}
export SLURM_CONF=$STATE/etc/slurm.conf
ETC_CONF=/etc/slurm/slurm.conf
MUNGE_SOCKET=$STATE/munge/munge.socket
HOST=$(hostname -s)
# slurmctld and slurmd pull in slurm-client (sbatch, srun, squeue, sinfo), munge and the plugins.
PACKAGES=(slurmctld slurmd)
BINARIES=(munged mungekey slurmctld slurmd sbatch squeue sinfo srun scontrol scancel)

say() { echo "cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }
need_root() { [[ $(id -u) == 0 ]] || die "$1 needs root (slurmd runs jobs as their users)"; }

# The pid in a pid file whose process is alive and is the expected program (not a recycled pid, not
# a zombie waiting for a container's PID 1 to reap it). Callers use the printed pid instead of
# reading the file again: a daemon removes it as it exits.
live_pid() {  # live_pid NAME PIDFILE
    local pid
    pid=$(cat "$2" 2>/dev/null) && [[ -n $pid ]] || return 1
    [[ -r /proc/$pid/comm && $(</proc/"$pid"/comm) == "$1"* ]] || return 1
    [[ $(cut -d' ' -f3 /proc/"$pid"/stat 2>/dev/null) != Z ]] || return 1
    echo "$pid"
}

running() { live_pid "$@" >/dev/null; }  # running NAME PIDFILE

pidfile() {
    case $1 in
        munged) echo "$STATE/munge/munged.pid" ;;
        *) echo "$STATE/run/$1.pid" ;;
    esac
}

node_state() { sinfo -h -n "$HOST" -o %T 2>/dev/null || true; }

cmd_install() {
    local missing=()
    for b in "${BINARIES[@]}"; do command -v "$b" >/dev/null || missing+=("$b"); done
    if ((${#missing[@]} == 0)); then
        say "SLURM and munge are installed"
        return
    fi
    need_root install
    say "installing ${PACKAGES[*]} (missing: ${missing[*]})"
    apt-get update -q
    # --no-install-recommends: no docs, no mail server. The packages' own services need
    # /etc/slurm/slurm.conf, which we never write, so they do not start on a systemd machine.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
}

# slurm.conf from the template next to this script, for this machine. No cgroup.conf: no plugin in
# it uses cgroups, and slurmd starts and runs jobs without one.
write_configs() {
    local cpus mem
    # slurmd -C prints what slurmd will detect; a node configured with more than that is drained.
    cpus=$(slurmd -C | sed -n 's/.*\bCPUs=\([0-9]*\).*/\1/p')
    mem=$(slurmd -C | sed -n 's/.*\bRealMemory=\([0-9]*\).*/\1/p')
    [[ -n $cpus && -n $mem ]] || die "slurmd -C printed no CPUs/RealMemory"
    sed -e "s|@HOST@|$HOST|g" -e "s|@CPUS@|$cpus|g" -e "s|@MEM_MB@|$mem|g" -e "s|@STATE@|$STATE|g" \
        "$HERE/slurm.conf.in" >"$SLURM_CONF"
    say "node $HOST: $cpus CPUs, $mem MB"
}

link_config() {
    if [[ -L $ETC_CONF && $(readlink "$ETC_CONF") == "$SLURM_CONF" ]]; then return; fi
    # A real cluster's config (or someone else's) is never replaced.
    [[ -e $ETC_CONF || -L $ETC_CONF ]] && die "$ETC_CONF exists and is not ours: stop that cluster or move it away"
    mkdir -p "$(dirname "$ETC_CONF")"
    ln -s "$SLURM_CONF" "$ETC_CONF"
}

start_munged() {
    running munged "$(pidfile munged)" && return
    # Our own key and socket: the machine's munged (if any) and /etc/munge stay untouched.
    # munged refuses group- or world-writable directories and a key readable by others.
    [[ -s $STATE/munge/munge.key ]] || mungekey --create --keyfile="$STATE/munge/munge.key"
    chmod 0600 "$STATE/munge/munge.key"
    munged --socket="$MUNGE_SOCKET" --key-file="$STATE/munge/munge.key" \
        --pid-file="$(pidfile munged)" --log-file="$STATE/log/munged.log" \
        --seed-file="$STATE/munge/munged.seed"
}

start_slurm_daemon() {  # slurmctld | slurmd; each forks into the background and writes its pid file
    running "$1" "$(pidfile "$1")" && return
    "$1" -f "$SLURM_CONF"
}

wait_idle() {
    local state
    for _ in $(seq 60); do
        state=$(node_state)
        case $state in
            idle | mixed | allocated) say "node $HOST is $state"; return ;;
            # left down or drained by an earlier run (e.g. killed daemons): bring it back
            down* | drain* | fail*) scontrol update nodename="$HOST" state=resume 2>/dev/null || true ;;
        esac
        sleep 1
    done
    die "node $HOST did not become idle (state: '${state:-no answer}'); see $STATE/log/"
}

cmd_start() {
    if running munged "$(pidfile munged)" && running slurmctld "$(pidfile slurmctld)" \
        && running slurmd "$(pidfile slurmd)" && [[ $(node_state) =~ ^(idle|mixed|allocated) ]]; then
        link_config
        say "already up ($SLURM_CONF)"
        return
    fi
    need_root start
    command -v slurmctld >/dev/null || die "SLURM is not installed: run '$0 install' as root"
    # 0755: munged rejects writable-by-others directories; clients of any user reach the socket.
    install -d -m 0755 "$STATE"/{etc,munge,spool/ctld,spool/d,run,log}
    write_configs
    link_config
    start_munged
    start_slurm_daemon slurmctld
    start_slurm_daemon slurmd
    wait_idle
    say "up: $(sinfo -h -o '%P %D node(s) %T %c CPUs %m MB')"
}

# slurmd stopped and started again, as an admin's restart does: running jobs' slurmstepd processes
# outlive it, and the node registers again.
cmd_restart_slurmd() {
    need_root restart-slurmd
    stop_daemon slurmd
    start_slurm_daemon slurmd
    wait_idle
}

stop_daemon() {  # NAME: TERM, then KILL after 30 s
    local file pid
    file=$(pidfile "$1")
    pid=$(live_pid "$1" "$file") || return 0
    kill "$pid" 2>/dev/null || { say "$1 had already stopped"; return 0; }
    for _ in $(seq 30); do running "$1" "$file" || { say "stopped $1 ($pid)"; return; }; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
    say "killed $1 ($pid)"
}

cmd_stop() {
    # Cancel jobs first: their slurmstepd processes would outlive slurmd.
    if running slurmctld "$(pidfile slurmctld)" && [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
        squeue -h -o %i | xargs -r scancel --quiet || true
        for _ in $(seq 30); do [[ -z $(squeue -h -t running,completing -o %i) ]] && break; sleep 1; done
    fi
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon munged
    if [[ -L $ETC_CONF && $(readlink "$ETC_CONF") == "$SLURM_CONF" ]]; then rm "$ETC_CONF"; fi
}

cmd_status() {
    local up=0 pid
    for d in munged slurmctld slurmd; do
        if pid=$(live_pid "$d" "$(pidfile "$d")"); then
            echo "$d: running (pid $pid)"
        else
            echo "$d: stopped"
            up=3
        fi
    done
    if running slurmctld "$(pidfile slurmctld)"; then
        sinfo
        squeue
    fi
    return $up
}

case ${1:-} in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    restart-slurmd) cmd_restart_slurmd ;;
    *) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0" >&2; exit 2 ;;
esac
