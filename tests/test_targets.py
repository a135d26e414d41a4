"""Targets as adapters (issue 23): discovery, staging, the scenario fields, the capability check and the
pre-flight's one-line refusals. The real stacks run in tests/test_targets_e2e.py."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from harness import TARGETS_DIR, targets
from harness.errors import HarnessError
from harness.scenarios import Scenario, load_file
from harness.suite import preflight
from harness.targets import Setup
from harness.tools import capabilities, registry
from harness.tools.output import RunSpec


def scenario(**fields) -> Scenario:
    return Scenario(id="s", vus=10, rtt_ms=0.1, duration_s=5, **fields)


def test_the_targets_are_folders_with_their_manifests():
    found = targets.discover()
    assert set(found) == {"nginx", "nginx-proxy", "haproxy", "caddy", "api"}
    assert found["nginx"].role == "server" and found["nginx"].image == "lth-target:latest"
    for proxy in ("nginx-proxy", "haproxy", "caddy"):
        adapter = found[proxy]
        assert adapter.is_proxy and (adapter.folder / f"{adapter.config}.j2").is_file()
        assert (adapter.folder / "Dockerfile").is_file() and adapter.image == f"lth-target-{proxy}:latest"
        assert set(adapter.packages) <= set(re.findall(r"[a-z0-9-]+", (adapter.folder / "Dockerfile").read_text()))


def test_the_file_server_alone_is_todays_target(tmp_path):
    stack = targets.stage(Setup(), tmp_path, "198.18.0.2", "198.18.0.2", None)
    assert [p.role for p in stack.processes] == ["upstream"]
    assert stack.target.url == "http://198.18.0.2:80/style.css" and stack.target.status_port == 80
    assert not list((tmp_path / "files").glob("lth-*.conf"))          # nothing added to nginx.conf
    assert "listen 80 backlog" in (tmp_path / "files" / "nginx.conf").read_text()


@pytest.mark.parametrize("cpus, expected, described", [
    (None, "auto", "nginx 1.22.1 on CPUs 0-1"),
    ({"upstream": (0,)}, "1", "nginx 1.22.1 (1 worker) on CPUs 0"),
    ({"upstream": (2, 3, 5)}, "3", "nginx 1.22.1 (3 workers) on CPUs 2-3,5")])
def test_the_file_server_runs_one_worker_per_cpu_it_is_given(tmp_path, cpus, expected, described):
    """Nginx's `auto` counts the machine's CPUs, not its cpuset: two workers on one CPU took turns (issue 53)."""
    stack = targets.stage(Setup(), tmp_path, "198.18.0.2", "198.18.0.2", None, cpus)
    conf = (tmp_path / "files" / "nginx.conf").read_text()
    assert re.findall(r"^worker_processes (\S+);", conf, re.MULTILINE) == [expected]
    assert conf.replace(f"worker_processes {expected};", "worker_processes auto;") == \
        (TARGETS_DIR / "nginx" / "nginx.conf").read_text()      # nothing else changed
    facts = targets.stack_facts(stack, cpus or {"upstream": (0, 1)}, {"nginx": "1.22.1"})
    assert facts["target_stack"] == described


def test_an_nginx_proxy_runs_one_worker_per_cpu_of_its_own_share(tmp_path):
    stack = targets.stage(Setup("nginx-proxy"), tmp_path, "198.18.1.10", "198.18.1.11", None,
                          {"proxy": (0,), "upstream": (1, 2)})
    assert [p.workers for p in stack.processes] == [2, None]
    assert "worker_processes 2;" in (tmp_path / "files" / "nginx.conf").read_text()
    assert "worker_processes 1;" in (tmp_path / "proxy" / targets.get("nginx-proxy").config).read_text()


@pytest.mark.parametrize("setup", [Setup(), Setup("haproxy", tls=True)])
def test_dockers_file_server_serves_from_a_folder_directly_under_tmp_mounted_at_its_path(setup):
    """Nginx walks the served file's path at every request (open_file_cache off): below the runtime's folder, 2
    components deeper than a copy by hand, oha lost 1.6% on the host (issue 53). The folder is mounted by both
    compose files at the same path, and removed with the runtime."""
    from harness.cpus import CpuSplit
    from harness.runtimes.docker import COMPOSE_FILE, UPSTREAM_FILE, DockerRuntime
    runtime = DockerRuntime()
    runtime.split = CpuSplit(available=(0, 1), target=(0,), tool=(1,))
    with runtime:                            # without Docker: its folders staged, nothing started
        runtime.use_target(setup)
        argv = runtime._stack.processes[0].argv
        served = Path(argv[argv.index("-p") + 1])
        assert served.parent == Path(tempfile.gettempdir()) and (served / "html" / "style.css").is_file(), argv
        assert runtime._target_env(None)["LTH_SERVED_DIR"] == str(served)
    assert not served.exists()
    for compose in (COMPOSE_FILE, UPSTREAM_FILE):
        file_server = yaml.safe_load(compose.read_text())["services"]["upstream" if compose == UPSTREAM_FILE else "target"]
        assert "${LTH_SERVED_DIR:-/srv/lth-served}:${LTH_SERVED_DIR:-/srv/lth-served}" in file_server["volumes"]


@pytest.mark.parametrize("proxy", ["nginx-proxy", "haproxy", "caddy"])
def test_a_proxy_listens_where_the_tools_go_and_forwards_to_the_file_server_on_8080(tmp_path, proxy):
    certificate = targets.Certificate(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "both.pem")
    stack = targets.stage(Setup(proxy, tls=True), tmp_path / "stack", "198.18.1.10", "198.18.1.11", certificate)
    upstream, front = stack.processes
    assert (upstream.role, front.role) == ("upstream", "proxy")
    assert "listen 8080 backlog" in (tmp_path / "stack" / "files" / "nginx.conf").read_text()
    config = (tmp_path / "stack" / "proxy" / targets.get(proxy).config).read_text()
    assert "198.18.1.11:8080" in config and "443" in config
    assert str(certificate.pem if proxy == "haproxy" else certificate.cert) in config
    assert stack.target.url == "https://198.18.1.10:443/style.css"
    assert (stack.target.status_host, stack.target.status_port) == ("198.18.1.11", 8080)
    assert str(tmp_path / "stack" / "proxy" / targets.get(proxy).config) in front.argv


def test_tls_on_nginx_itself_keeps_port_80_for_the_harness(tmp_path):
    certificate = targets.Certificate(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "both.pem")
    stack = targets.stage(Setup(tls=True), tmp_path / "stack", "198.18.0.2", "198.18.0.2", certificate)
    server = (tmp_path / "stack" / "files" / "lth-server.conf").read_text()
    assert "listen 443 ssl" in server and f"ssl_certificate {certificate.cert};" in server
    assert stack.target.port == 443 and stack.target.status_port == 80 and stack.target.tls


@pytest.mark.skipif(not targets.ECHO_MODULE.is_file(), reason="needs Debian's libnginx-mod-http-echo (make deps)")
def test_a_delay_range_is_256_uniform_steps_and_the_probe_path_is_undelayed(tmp_path):
    stack = targets.stage(Setup(delay_ms=(0.0, 1000.0)), tmp_path / "stack", "198.18.0.2", "198.18.0.2", None)
    files = tmp_path / "stack" / "files"
    levels = [float(v) for v in re.findall(r"~\^[0-9a-f]{2} ([\d.]+);", (files / "lth-http.conf").read_text())]
    assert len(levels) == targets.DELAY_LEVELS and levels[0] == 0 and levels[-1] == 1.0
    assert levels == sorted(levels)
    assert "echo_sleep $lth_delay_s" in (files / "lth-server.conf").read_text()
    assert stack.target.probe_path == "/lth-undelayed/style.css" and stack.target.path == "/style.css"
    fixed = targets.stage(Setup(delay_ms=(50.0, 50.0)), tmp_path / "fixed", "h", "h", None)
    assert "default 0.050;" in (tmp_path / "fixed" / "files" / "lth-http.conf").read_text()
    assert fixed.setup.describe() == "nginx, backend delay 50 ms"


def test_scenario_fields_are_validated_in_one_line(tmp_path):
    assert scenario(backend_delay_ms="0..1000").delay_range_ms == (0.0, 1000.0)
    assert scenario(backend_delay_ms=50).delay_range_ms == (50.0, 50.0)
    assert Setup.of(scenario(target="haproxy", tls=True)) == Setup("haproxy", True, None)
    for text, expected in [("target: envoy", "unknown target 'envoy'; available: api, caddy, haproxy, nginx, nginx-proxy"),
                           ("backend_delay_ms: 5..1", "need 0 <= min <= max"),
                           ("backend_delay_ms: soon", "backend_delay_ms must be milliseconds (50) or a range"),
                           ("tls: maybe", "scenarios[0].tls: Input should be a valid boolean"),
                           ("keepalive: 0", "scenarios[0].keepalive: Input should be a valid boolean")]:
        path = tmp_path / "bad.yaml"
        path.write_text("scenarios:\n  - {id: x, vus: 1, rtt_ms: 0.1, duration_s: 5, " + text + "}\n")
        with pytest.raises(HarnessError) as error:
            load_file(path)
        assert expected in str(error.value) and "\n" not in str(error.value)


def test_the_targets_file_asks_each_question():
    loaded = load_file(TARGETS_DIR.parent / "scenarios" / "targets.yaml")
    setups = {(s.target, s.keepalive, s.tls, s.backend_delay_ms, s.vus, s.rtt_ms) for s in loaded}
    assert {("nginx", False, False, None, 20, 0.1), ("nginx", True, True, None, 20, 0.1),
            ("nginx", True, True, None, 100, 50)} <= setups
    for target in ("nginx", "nginx-proxy", "haproxy", "caddy"):
        assert {vus for t, ka, tls, d, vus, rtt in setups if t == target and ka and not tls and not d
                and vus in (1, 16, 32, 64)} == {1, 16, 32, 64}
    assert ("nginx", True, False, "0..1000", 1000, 0.1) in setups


def test_a_tool_that_cannot_gets_its_reason_never_a_different_test():
    fake = SimpleNamespace(open_model=False, rate_model="closed model only: no rate",
                           keepalive_off="it has no option to close connections", tls=True,
                           h2="it speaks HTTP/1.1 only", h2c=True, h2_connections="any",
                           h3="it has no QUIC", login_flow="it sends one fixed request")
    assert capabilities.unsupported_reason(scenario(keepalive=False), fake) == \
        "keep-alive off not supported: it has no option to close connections"
    assert capabilities.unsupported_reason(scenario(tls=True), fake) is None
    assert capabilities.unsupported_reason(scenario(), fake) is None
    assert capabilities.unsupported_reason(scenario(tls=True, protocol="h2"), fake) == \
        "h2 not supported: it speaks HTTP/1.1 only"
    assert capabilities.unsupported_reason(scenario(protocol="h2c", streams=5), fake) is None
    assert capabilities.matrix(fake) == {"open model": "no: closed model only: no rate",
                                         "keep-alive off": "no: it has no option to close connections", "TLS": "yes",
                                         "h2": "no: it speaks HTTP/1.1 only", "h2c": "yes",
                                         "h3": "no: it has no QUIC", "login flow": "no: it sends one fixed request"}


def test_run_spec_says_tls_from_the_url(tmp_path):
    assert RunSpec("https://198.18.0.2:443/style.css", 1, 1, tmp_path, 1).tls
    assert not RunSpec("http://198.18.0.2:80/style.css", 1, 1, tmp_path, 1, keepalive=False).tls


def test_the_preflight_names_a_missing_certificate_tool_and_server(monkeypatch, tmp_path):
    plan = SimpleNamespace(runtime="host", scenarios=[scenario(tls=True, target="haproxy")])
    runtime = SimpleNamespace(unsupported_reason=lambda s: None)
    monkeypatch.setattr(preflight.shutil, "which", lambda name: None)
    problems = preflight._target_problems(plan, runtime)
    assert "a TLS scenario needs openssl for its throw-away certificate: run `make deps`" in problems
    assert "target haproxy needs `haproxy` (Debian: haproxy): run `make deps`" in problems
    plan.runtime = "docker"                  # the images carry the servers; the certificate is made here
    assert preflight._target_problems(plan, runtime) == [problems[0]]


def test_a_selection_where_no_tool_can_do_what_is_asked_is_refused_in_one_line(tmp_path):
    h2load, wrk = registry.select("h2load,wrk")
    asked = SimpleNamespace(scenarios=[scenario(keepalive=False)], tools=[h2load])
    message = preflight._nothing_supported(asked)
    assert message.startswith("nothing to run: h2load: keep-alive off not supported: h2load ") and "\n" not in message
    assert preflight._nothing_supported(SimpleNamespace(scenarios=[scenario(keepalive=False)], tools=[h2load, wrk])) is None
    assert preflight._nothing_supported(SimpleNamespace(scenarios=[scenario()], tools=[h2load])) is None


def test_asking_only_for_what_the_tool_cannot_do_exits_2_before_anything(tmp_path):
    result = subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "host", "--tools", "h2load",
                             "--scenarios", "scenarios/targets.yaml:ka-off-vu20-rtt0.1", "--results", str(tmp_path)],
                            cwd=TARGETS_DIR.parent, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.startswith("error: nothing to run: h2load: keep-alive off")
    assert len(result.stderr.splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_the_throw_away_private_key_is_readable_by_its_owner_only(tmp_path):
    """The servers that read it start as root (Nginx's master, HAProxy, Caddy; in Docker the target container
    runs as root too): 0600 is enough for them, and no other local user can read the key."""
    certificate = targets.make_certificate(tmp_path / "certificate")
    modes = {p.name: p.stat().st_mode & 0o777 for p in (certificate.cert, certificate.key, certificate.pem)}
    assert modes == {"cert.pem": 0o644, "key.pem": 0o600, "both.pem": 0o600}
    assert certificate.pem.read_text() == certificate.cert.read_text() + certificate.key.read_text()
