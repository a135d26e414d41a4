"""Nginx on another machine (--target-host), started, sampled, frozen and removed over ssh; used by
the remote-target runtime (remote.py) and by the generator hosts' sessions (generator.py)."""
from __future__ import annotations

import io
import secrets
import shlex
import tarfile
import tempfile
from pathlib import Path

from harness import PREFIX
from harness.runtimes.ssh import SshHost
from harness.sampling import TopSampler
from harness.targets.file_server import stage

START_TIMEOUT_S = 60
# top over ssh: batch mode, one frame per interval, wide lines, KiB memory, every CPU's line.
TOP = "LC_ALL=C TERM=dumb exec top -b -d {interval} -w 512 -e k -1"

# Started in the background so the ssh session ends; it waits for Nginx's pid file so a bind error
# (port taken) comes back as Nginx's own message.
START_SCRIPT = """set -e
d={workdir}
command -v nginx >/dev/null || {{ echo "nginx is not installed on $(hostname): apt-get install nginx" >&2; exit 3; }}
mkdir -m 700 "$d"
tar -C "$d" -xf -
chmod 755 "$d"
setsid nginx -p "$d/" -c "$d/nginx.conf" >"$d/nginx.log" 2>&1 </dev/null &
i=0
while [ ! -s "$d/nginx.pid" ] && kill -0 $! 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
kill -0 $! 2>/dev/null || {{ tail -n 3 "$d/nginx.log" >&2; exit 5; }}
"""
# The stall test: SIGSTOP, hold, SIGCONT in one script, which ignores the ssh session ending, so the
# SIGCONT is sent whatever happens here; the length is timed on this host's clock.
FREEZE_SCRIPT = """trap '' HUP PIPE INT TERM
pids=$({pids_command})
[ -n "$pids" ] || exit 3
kill -STOP $pids; t0=$(date +%s%N)
sleep {seconds}
kill -CONT $pids; t1=$(date +%s%N)
echo $t0 $t1 $pids
"""
# Finds the master by its prefix argument: the pattern is written with `$d` unexpanded, so it
# does not match this script's own command line.
STOP_SCRIPT = """d={workdir}
case "$d" in /tmp/{prefix}-target-*) ;; *) echo "refusing to remove $d" >&2; exit 2;; esac
for master in $(pgrep -f "nginx -p $d/"); do
  workers=$(pgrep -P "$master" || true)
  kill -TERM "$master" 2>/dev/null
  i=0
  while kill -0 "$master" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.2; i=$((i+1)); done
  kill -KILL "$master" $workers 2>/dev/null
done
rm -rf "$d"
[ ! -e "$d" ]
"""


class RemoteNginx:
    """Nginx in a fresh /tmp/lth-target-* folder on the other host, named here so that it can be
    stopped and removed even when its start was interrupted half-way."""

    def __init__(self, host: SshHost):
        self.host = host
        self.workdir = f"/tmp/{PREFIX}-target-{secrets.token_hex(6)}"
        self.started = False

    def start(self) -> None:
        self.started = True
        with tempfile.TemporaryDirectory(prefix=f"{PREFIX}-stage-") as staging:
            stage(Path(staging), listen_address=self.host.address)
            bundle = io.BytesIO()
            with tarfile.open(fileobj=bundle, mode="w") as tar:
                tar.add(staging, arcname=".")
        self.host.run(START_SCRIPT.format(workdir=shlex.quote(self.workdir)), stdin=bundle.getvalue(),
                      timeout=START_TIMEOUT_S)

    def stop(self) -> None:
        if self.started:
            self.host.run(STOP_SCRIPT.format(workdir=shlex.quote(self.workdir), prefix=PREFIX), timeout=60)
            self.started = False

    def log(self) -> str:
        result = self.host.run(f"cat {shlex.quote(self.workdir)}/nginx.log", check=False)
        return result.stdout.decode(errors="replace")

    @property
    def pids_command(self) -> str:
        """A shell command there printing Nginx's master and worker pids."""
        return f"m=$(cat {shlex.quote(self.workdir)}/nginx.pid) && echo $m $(pgrep -P $m)"

    def freeze(self, ms: int) -> tuple[set[int], float]:
        """The stall test's freeze of Nginx there (stall.py RemoteFreeze)."""
        answer = self.host.text(FREEZE_SCRIPT.format(pids_command=self.pids_command, seconds=f"{ms / 1000:.3f}"),
                                timeout=ms / 1000 + 60).split()
        return {int(p) for p in answer[2:]}, (int(answer[1]) - int(answer[0])) / 1e6

    def sampler(self) -> TopSampler:
        """top on the target host over Nginx's master and workers (their pids read once: Nginx does
        not fork during a run)."""
        pids = {int(p) for p in self.host.text(self.pids_command).split()}
        return TopSampler(lambda: pids, local=False, command=self.host.argv(TOP.format(interval=1)))
