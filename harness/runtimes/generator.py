"""Tools on other machines (``--generator-host ssh://user@host[,ssh://...]``), with Nginx on
another one (``--target-host``): the host runtime's tools, started over ssh.

Per suite, each generator host gets a folder /tmp/lth-generator-*/ holding the selected tools'
folders (scripts, plans) and harness/rtt_probe.py; the tools themselves are installed there as
here (`make deps RUNTIME=host` on that machine, the same /opt/lth layout). Per run:

- the tool's argv is rewritten from this machine's paths to that folder's, started by a launcher
  that prints ``ready <pid>`` and waits for ``go`` on its stdin: every generator of a run is
  released together once all are ready (a barrier that needs no clock sync), then ``exec``s the
  tool with its stdout/stderr in files there;
- memory and CPU come from ``top -b -d 1`` run there (the same parser as here), its pids from a
  process table read there twice a second (``ps``), which also gives the independent RSS check;
- a tool past its deadline is signalled there; the run's folder is copied back when it ends.
"""
from __future__ import annotations

import io
import json
import secrets
import shlex
import subprocess
import tarfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from harness import PREFIX, REPO_ROOT
from harness.cpus import CpuSplit
from harness.errors import HarnessError
from harness.processes import end_process, signals_deferred
from harness.runtimes.base import Session
from harness.runtimes.remote_nginx import TOP, RemoteNginx
from harness.runtimes.ssh import SshHost
from harness.runtimes.together import StartBarrier
from harness.sampling import MemoryCheck, PidSource, TopSampler
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter


READY_TIMEOUT_S = 30.0
BUNDLE_SKIP = {"prebuilt", "node_modules", "__pycache__", "target", ".cache"}
PROBE = Path("harness/rtt_probe.py")
# Every line "pid ppid rss_kib name", then a "." line: one snapshot, twice a second, until the
# ssh session ends (the shell dies writing to the closed channel).
PS_LOOP = "while :; do ps -e -o pid=,ppid=,rss=,comm=; echo .; sleep 0.5; done"
LAUNCH = """set -e
mkdir -p {run}
cd {run}
echo "ready $$"
read go
[ "$go" = go ]
exec {argv} >{run}/stdout.txt 2>{run}/stderr.txt </dev/null
"""
STOP = """alive() {{ for p in {pids}; do kill -0 $p 2>/dev/null && return 0; done; return 1; }}
for sig in TERM KILL; do
  kill -$sig {pids} 2>/dev/null
  i=0; while alive && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
done
true
"""
CHECK = """for b in {binaries}; do [ -x "$b" ] || command -v "$b" >/dev/null || echo "missing $b"; done
for c in top ps python3 tar; do command -v $c >/dev/null || echo "missing $c"; done
true
"""
PROXY = """cd {workdir}
[ -x {binary} ] || {{ echo "{binary} is not installed on $(hostname): run make deps there" >&2; exit 3; }}
echo $$ > {workdir}/proxy.pid
exec {argv} </dev/null
"""
STOP_PROXY = "kill -TERM $(cat {workdir}/proxy.pid) 2>/dev/null; rm -f {workdir}/proxy.pid; true"
# One HTTP call to an API on the generator host's loopback: argv host port method path body.
API_CALL = """import http.client, sys
host, port, method, path, body = sys.argv[1:6]
conn = http.client.HTTPConnection(host, int(port), timeout=5)
conn.request(method, path, body=body or None, headers={"Content-Type": "application/json"})
response = conn.getresponse()
sys.stdout.write(response.read().decode())
sys.exit(0 if response.status < 300 else 1)
"""
LABEL = f"{PREFIX}-remote"     # on every container the harness starts on another host (remote_docker.py)
# Every such container left there (clean-state --target-host / --generator-host).
DOCKER_SWEEP = f"""command -v docker >/dev/null || exit 0
for c in $(docker ps -aq --filter label={LABEL} 2>/dev/null); do docker rm -f $c >/dev/null && echo "container $c"; done
true
"""
# The tools still running in a generator folder (their working directory is a run's folder there),
# then the folders: at the end of a suite (also after Ctrl-C) and by clean-state --generator-host.
SWEEP = """for p in /proc/[0-9]*; do
  case "$(readlink $p/cwd 2>/dev/null)" in {prefix}*) kill -KILL ${{p#/proc/}} 2>/dev/null && echo "process ${{p#/proc/}}";; esac
done
for d in {prefix}*; do [ -e "$d" ] && rm -rf "$d" && echo "folder $d"; done
true
"""


def bundle(adapters: list[ToolAdapter]) -> bytes:
    """A tar of what the tools' commands name inside this repository: their folders and the RTT probe."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        tar.add(REPO_ROOT / PROBE, arcname=str(PROBE))
        for folder in sorted({a.folder for a in adapters}):
            tar.add(folder, arcname=str(folder.relative_to(REPO_ROOT)),
                    filter=lambda info: None if set(Path(info.name).parts) & BUNDLE_SKIP else info)
    return data.getvalue()


def there(text: str, workdir: str, run_dir: Path | None = None, remote_run: str | None = None) -> str:
    """``text`` with this machine's paths replaced by their copies where the tool runs: the run's folder
    by ``remote_run``, the repository by ``workdir`` (where ``bundle`` was unpacked). Generator hosts and
    engine tasks (task.py) alike."""
    if run_dir is not None and remote_run is not None:
        text = text.replace(str(run_dir), remote_run)
    return text.replace(str(REPO_ROOT), workdir)


class ProcessTable:
    """The generator host's processes as ``ps`` last listed them: pid -> (ppid, rss KiB, name)."""

    def __init__(self, host: SshHost):
        self._host = host
        self._table: dict[int, tuple[int, int, str]] = {}
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "ProcessTable":
        self._proc = subprocess.Popen(self._host.argv(PS_LOOP), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._proc:
            end_process(self._proc)
        if self._thread:
            self._thread.join(timeout=5)

    def _read(self) -> None:
        snapshot: dict[int, tuple[int, int, str]] = {}
        for line in self._proc.stdout:
            if line.strip() == ".":
                self._table, snapshot = snapshot, {}
                continue
            parts = line.split(None, 3)
            if len(parts) == 4 and parts[0].isdigit() and parts[1].isdigit() and parts[2].isdigit():
                snapshot[int(parts[0])] = (int(parts[1]), int(parts[2]), parts[3].strip())

    def tree(self, root: int, name: str | None = None) -> set[int]:
        """``root`` and its descendants; with ``name``, only the processes so named and theirs."""
        table = self._table
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found, todo = set(), [root]
        while todo:
            pid = todo.pop()
            found.add(pid)
            todo += children.get(pid, [])
        if name is None:
            return found
        named = {pid for pid in found if pid in table and table[pid][2] == name}
        return {pid for pid in found if any(p in named for p in self._ancestry(pid, table))}

    @staticmethod
    def _ancestry(pid: int, table: dict[int, tuple[int, int, str]]) -> Iterator[int]:
        while pid in table:
            yield pid
            pid = table[pid][0]

    def rss_mb(self, pids: set[int]) -> float | None:
        table = self._table
        rows = [table[p][1] for p in pids if p in table]
        return sum(rows) / 1024 if rows else None


class GeneratorHost:
    """One generator machine for the suite: its folder, its process table, its CPU count."""

    def __init__(self, ssh: SshHost):
        self.ssh = ssh
        self.workdir = f"/tmp/{PREFIX}-generator-{secrets.token_hex(6)}"
        self.processes = ProcessTable(ssh)
        self.cores: int | None = None
        self._started = False

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        binaries = " ".join(shlex.quote(a.version_command[0]) for a in adapters if not a.unavailable)
        try:
            answer = self.ssh.text(CHECK.format(binaries=binaries), timeout=30)
        except HarnessError as exc:
            return [f"{exc} (the harness needs key-based ssh there, no password prompt)"]
        missing = [line.split(" ", 1)[1] for line in answer.splitlines() if line.startswith("missing ")]
        return [f"not installed on the generator host {self.ssh.url}: {', '.join(missing)}: install them there "
                "(clone this repository there and run `make deps RUNTIME=host`)"] if missing else []

    def start(self, adapters: list[ToolAdapter]) -> None:
        self._started = True
        answer = self.ssh.run(f"mkdir -m 700 {self.workdir} && tar -C {self.workdir} -xf - && nproc",
                              stdin=bundle(adapters), timeout=120)
        self.cores = int(answer.stdout.split()[-1])
        self.processes.__enter__()

    def stop(self) -> None:
        self.processes.__exit__(None, None, None)
        if self._started:
            self.ssh.run(SWEEP.format(prefix=self.workdir), check=False, timeout=60)
            self._started = False

    def session(self, adapter: ToolAdapter | None, target: Target, split: CpuSplit, barrier: StartBarrier | None,
                nginx: RemoteNginx | None, target_cores: int | None) -> "RemoteGeneratorSession":
        """A place to run ``adapter`` here for one run (None: the RTT probe only)."""
        return RemoteGeneratorSession(target, split, self, barrier, nginx, target_cores)

    def there(self, text: str, run_dir: Path | None = None, remote_run: str | None = None) -> str:
        """``text`` with this machine's paths replaced by their copies on the generator host."""
        return there(text, self.workdir, run_dir, remote_run)


class RemoteGeneratorSession(Session):
    """The tool on a generator host, against the target on the target host."""

    memory_check_name = "ps RSS on the generator host"

    def __init__(self, target: Target, split: CpuSplit, generator: GeneratorHost,
                 barrier: StartBarrier | None = None, nginx: RemoteNginx | None = None,
                 target_cores: int | None = None):
        """``nginx``: the target, whose log this session keeps and whose CPU it samples (None: another
        generator's session of the same run does)."""
        self.target, self.split, self.generator, self._barrier = target, split, generator, barrier
        self._nginx, self.target_cores = nginx, target_cores
        self.remote_freeze = nginx.freeze if nginx is not None else None
        self.where = f"{generator.ssh.url} (paths under {REPO_ROOT} as copied to {generator.workdir})"
        self.cpus = generator.cores or len(split.tool_cpus)
        # Capture and shaping are refused with generator hosts (preflight, unsupported_reason).
        self.generator_netns, self.target_netns, self.shape_netns = [], [], []
        self.shape_device = self.capture_device = ""
        self.explicit_target = target.host
        self._roots: dict[int, int] = {}          # local ssh pid -> the tool's pid there
        self._runs: dict[int, tuple[Path, str]] = {}

    def popen(self, argv: list[str], stdout: IO, stderr: IO, run_dir: Path | None = None) -> subprocess.Popen:
        remote_run = f"{self.generator.workdir}/runs/{secrets.token_hex(4)}"
        tool = shlex.join(self.generator.there(arg, run_dir, remote_run) for arg in argv)
        proc = subprocess.Popen(self.launcher(LAUNCH.format(run=shlex.quote(remote_run), argv=tool)),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        try:
            self._roots[proc.pid] = self._ready(proc)
            if self._barrier is not None:
                self._barrier.wait()
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        except BaseException:
            if self._barrier is not None:
                self._barrier.abort()
            proc.kill()
            proc.wait(timeout=10)
            raise
        if run_dir is not None:
            self._runs[proc.pid] = (run_dir, remote_run)
        return proc

    def launcher(self, script: str) -> list[str]:
        """The command here that runs the launcher ``script`` with sh there."""
        return self.generator.ssh.argv(script)

    def _ready(self, proc: subprocess.Popen) -> int:
        """The launcher's ``ready <pid>`` line: it is set up there, waiting for ``go``."""
        answer: list[bytes] = []
        reader = threading.Thread(target=lambda: answer.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(READY_TIMEOUT_S)
        words = answer[0].split() if answer else []
        if len(words) != 2 or words[0] != b"ready" or not words[1].isdigit():
            raise HarnessError(f"{self.generator.ssh.url}: the tool's launcher did not get ready within "
                               f"{READY_TIMEOUT_S:.0f} s (ssh exit {proc.poll()}): see stderr.txt")
        return int(words[1])

    def pids(self, proc: subprocess.Popen) -> PidSource:
        root = self._roots[proc.pid]
        return lambda: self.generator.processes.tree(root) if proc.poll() is None else set()

    def sampled_pids(self, proc: subprocess.Popen, name: str | None) -> PidSource:
        root = self._roots[proc.pid]
        return lambda: self.generator.processes.tree(root, name) if proc.poll() is None else set()

    def sampler(self, pids: PidSource, others: dict[str, PidSource], check: MemoryCheck | None) -> TopSampler:
        return TopSampler(pids, others=others, check=check, local=False,
                          command=self.generator.ssh.argv(TOP.format(interval=1)))

    def memory_check(self, pids: set[int]) -> float | None:
        return self.generator.processes.rss_mb(pids)

    def stop(self, proc: subprocess.Popen, pids: set[int]) -> None:
        pids = pids | {self._roots[proc.pid]}
        # The script ends within ~10 s; the rest is room for an ssh login on a host whose CPUs the load fills.
        self.generator.ssh.run(STOP.format(pids=" ".join(map(str, sorted(pids)))), check=False, timeout=60)
        end_process(proc, signum=None)    # the ssh session ends with the tool

    def finish(self, proc: subprocess.Popen) -> None:
        """Copy the run's folder back (the tool's stdout/stderr and files), then remove it there."""
        if proc.pid not in self._runs:
            return
        run_dir, remote_run = self._runs.pop(proc.pid)
        result = self.generator.ssh.run(f"tar -C {shlex.quote(remote_run)} -cf - . && rm -rf {shlex.quote(remote_run)}",
                                        timeout=300)
        with tarfile.open(fileobj=io.BytesIO(result.stdout)) as tar:
            tar.extractall(run_dir, filter="data")

    def run_python(self, script: Path, args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
        remote = self.generator.there(str(script))
        result = self.generator.ssh.run(shlex.join(["python3", "-S", remote, *args]), check=False, timeout=timeout)
        return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(errors="replace"),
                                           result.stderr.decode(errors="replace"))

    def target_sampler(self) -> TopSampler | None:
        return self._nginx.sampler() if self._nginx is not None else None

    # Two machines: a latency proxy runs on the generator host, on its loopback, forwarding to Nginx.
    proxy_beside_target = False

    def proxy_place(self) -> tuple[str, str]:
        return "127.0.0.1", self.target.host

    def start_proxy(self, argv: list[str], log: IO) -> subprocess.Popen:
        script = PROXY.format(workdir=self.generator.workdir, binary=shlex.quote(argv[0]), argv=shlex.join(argv))
        return subprocess.Popen(self.generator.ssh.argv(script), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def stop_proxy(self, proc: subprocess.Popen) -> None:
        self.generator.ssh.run(STOP_PROXY.format(workdir=self.generator.workdir), check=False, timeout=30)
        end_process(proc, signum=None)

    def proxy_api(self, host: str, port: int, method: str, path: str, body: dict | None = None) -> dict:
        argv = ["python3", "-c", API_CALL, host, str(port), method, path, json.dumps(body) if body else ""]
        result = self.generator.ssh.run(shlex.join(argv), check=False, timeout=30)
        if result.returncode != 0:
            raise HarnessError(f"toxiproxy API {method} {path} on {self.generator.ssh.url} failed: "
                               f"{(result.stdout or result.stderr).decode(errors='replace')[-200:]}")
        return json.loads(result.stdout) if result.stdout.strip() else {}

    def verify(self, target: Target) -> None:
        """Nginx itself, from here (a proxy on the generator's loopback is exercised by the RTT probe)."""
        self.target.verify()

    def save_logs(self, run_dir: Path) -> None:
        if self._nginx is not None:
            (run_dir / "nginx.log").write_text(self._nginx.log())

    def version(self, adapter: ToolAdapter) -> str:
        result = self.generator.ssh.run(shlex.join(adapter.version_command) + " 2>&1", check=False, timeout=60)
        return adapter.parse_version(result.stdout.decode(errors="replace"))


@contextmanager
def generators_up(hosts: list[GeneratorHost], adapters: list[ToolAdapter]) -> Iterator[None]:
    """Every generator host's folder and process table, for the suite; removed after it."""
    try:
        for host in hosts:
            host.start(adapters)
        yield
    finally:
        with signals_deferred():
            for host in hosts:
                host.stop()


def clean_generator(ssh: SshHost) -> list[str]:
    """What a killed harness left on a generator host: its tools and /tmp/lth-generator-* folders."""
    answer = ssh.text(DOCKER_SWEEP) + ssh.text(SWEEP.format(prefix=f"/tmp/{PREFIX}-generator-"))
    return [f"{line} on {ssh.url}" for line in answer.splitlines() if line]
