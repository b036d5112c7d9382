#!/bin/sh
# Install the Debian packages the test suite needs beyond Python:
#
#   munin-node   munin-run, to run misc/munin/ plugins as munin does
#                (tests/integration/test_munin.py)
#   chromium, chromium-driver
#                headless browser tests of the web UI (tests/integration/test_browser.py);
#                nothing ever downloads a browser or driver
#   openssh-client, sshfs
#                the SFTP frontend driven by OpenSSH's sftp and ssh-keygen, and mounted
#                with sshfs where the machine allows FUSE mounts
#                (tests/integration/test_sftp.py)
#   restic, rclone
#                backup and sync tools no one here wrote, run end to end over the SFTP
#                frontend (tests/integration/test_sftp_real_clients.py), and over the
#                S3 gateway (tests/integration/test_s3_clients.py)
#   s3cmd        a third S3 client with its own SigV4 signer and multipart code
#                (tests/integration/test_s3_clients.py); the aws CLI and boto3 come
#                from PyPI (setup.py's test extra)
#   iptables     random packet loss on the links of the multi-host grid in network
#                namespaces (tests/integration/test_netns_grid.py), where the kernel
#                has no sch_netem; iproute2 (ip netns, tc) is already part of Debian
#
# systemd-analyze (package systemd) is used when present
# (tests/shell/test_systemd_unit.py) and is not installed here.
#
#   sh misc/ci/install-system-packages.sh     # as root; a no-op when installed
#
# Idempotent and quick: when munin-run is already there it only makes sure no
# munin-node daemon was left running by the package's install scripts.
# Needs root (apt-get); without root it prints what to run and exits 1.
set -eu

say() { echo "install-system-packages: $*" >&2; }

# The package's postinst may start the munin-node daemon (it does where the
# init system runs services and no policy-rc.d forbids it).  The tests only
# need munin-run, so a daemon started that way is stopped again, by the PID it
# recorded and only if that PID really is munin-node.
stop_daemon() {
    for pidfile in /run/munin/munin-node.pid /var/run/munin/munin-node.pid; do
        [ -r "$pidfile" ] || continue
        pid=$(tr -cd '0-9' < "$pidfile")
        [ -n "$pid" ] || continue
        if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q munin-node; then
            say "stopping the munin-node daemon (pid $pid) started by the package"
            kill "$pid" 2>/dev/null || true
            i=0
            while [ -d "/proc/$pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        fi
        rm -f "$pidfile"
    done
}

missing=""
command -v munin-run >/dev/null 2>&1 || [ -x /usr/sbin/munin-run ] || missing="$missing munin-node"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
[ -x /usr/bin/chromedriver ] || missing="$missing chromium-driver"
command -v sftp >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 || missing="$missing openssh-client"
command -v sshfs >/dev/null 2>&1 || missing="$missing sshfs"
command -v restic >/dev/null 2>&1 || missing="$missing restic"
command -v rclone >/dev/null 2>&1 || missing="$missing rclone"
command -v s3cmd >/dev/null 2>&1 || missing="$missing s3cmd"
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing="$missing iptables"

if [ -z "$missing" ]; then
    stop_daemon
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    say "missing:$missing; run as root: apt-get install -y --no-install-recommends$missing"
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
say "installing$missing"
# shellcheck disable=SC2086
if ! apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1; then
    apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >/dev/null
fi
stop_daemon
[ -x /usr/sbin/munin-run ] || { say "munin-run still missing after install"; exit 1; }
[ -x /usr/bin/chromedriver ] || { say "chromedriver still missing after install"; exit 1; }
command -v sftp >/dev/null 2>&1 || { say "sftp still missing after install"; exit 1; }
command -v restic >/dev/null 2>&1 || { say "restic still missing after install"; exit 1; }
command -v rclone >/dev/null 2>&1 || { say "rclone still missing after install"; exit 1; }
command -v s3cmd >/dev/null 2>&1 || { say "s3cmd still missing after install"; exit 1; }
