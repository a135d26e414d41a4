"""--target-host without a second host: parsing, the safety rule, the bound config, refusals."""
import json
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from conftest import harness
from harness.errors import HarnessError
from harness.runtimes.remote import host_facts, remote_split
from harness.runtimes.ssh import SshHost, parse_ssh_url
from harness.suite.preflight import check_resume
from harness.targets.file_server import ensure_allowed, stage


def test_an_ssh_url_names_user_host_port_and_the_address_the_load_goes_to():
    host = parse_ssh_url("ssh://root@192.0.2.7:2222")
    assert (host.user, host.host, host.port, host.address) == ("root", "192.0.2.7", 2222, "192.0.2.7")
    assert parse_ssh_url("ssh://localhost").address == "127.0.0.1"


@pytest.mark.parametrize("text", ["root@192.0.2.7", "my-context", "ssh://", "ssh://h/path", "ssh://h:port"])
def test_anything_else_is_refused_with_the_form_to_use(text):
    with pytest.raises(HarnessError, match="--target-host"):
        parse_ssh_url(text)


@pytest.fixture
def docker_contexts(tmp_path, monkeypatch):
    """Docker contexts in a throw-away CLI config (the user's ~/.docker is not touched)."""
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))

    def create(name: str, host: str) -> None:
        subprocess.run(["docker", "context", "create", name, "--docker", f"host={host}"], check=True,
                       capture_output=True)
    return create


def test_a_docker_context_over_ssh_names_its_endpoint(docker_contexts):
    docker_contexts("lab-target", "ssh://root@192.0.2.9:2200")
    host = parse_ssh_url("lab-target")
    assert (host.context, host.url, host.user, host.port, host.address) == \
        ("lab-target", "ssh://root@192.0.2.9:2200", "root", 2200, "192.0.2.9")


def test_a_docker_context_without_ssh_is_refused_with_what_to_use(docker_contexts):
    docker_contexts("tcp-only", "tcp://192.0.2.9:2375")
    with pytest.raises(HarnessError, match="reaches its daemon at tcp://192.0.2.9:2375; .* host=ssh://"):
        parse_ssh_url("tcp-only")
    with pytest.raises(HarnessError, match="neither an ssh:// URL nor a Docker context"):
        parse_ssh_url("no-such-context", "--generator-host")


@pytest.mark.parametrize("text, part", [("ssh://-oProxyCommand=touch%20x", "host '-oproxycommand=touch%20x'"),
                                        ("ssh://-oProxyCommand=x@h", "user '-oProxyCommand=x'")])
def test_a_host_or_user_starting_with_a_dash_is_refused_in_one_line(text, part):
    """ssh would take it as an option (-oProxyCommand=... runs a command here)."""
    with pytest.raises(HarnessError) as refused:
        parse_ssh_url(text, "--generator-host")
    assert str(refused.value) == f"--generator-host {text!r}: the {part} starts with '-', which ssh would take as " \
                                 "an option: write ssh://[user@]host[:port] with neither starting with '-'"


def test_the_host_comes_after_a_double_dash_so_ssh_never_reads_it_as_an_option():
    argv = SshHost("ssh://-x", "-x", "192.0.2.7").argv("true")
    assert argv[argv.index("-x") - 1] == "--"


def test_ssh_never_prompts_and_uses_the_given_config(monkeypatch):
    monkeypatch.delenv("LTH_SSH_CONFIG", raising=False)
    argv = SshHost("ssh://u@h", "h", "192.0.2.7", user="u", port=22).argv("echo 'a b'")
    assert argv[:1] == ["ssh"] and "BatchMode=yes" in argv and "-F" not in argv
    # one "--", before the host: ssh takes the words after a "--" it has seen as the command; a second "--"
    # would reach the remote shell as its first word (the lab's e2e tests failed on it)
    assert argv[-3:] == ["--", "h", "sh -c 'echo '\"'\"'a b'\"'\"''"] and argv.count("--") == 1
    monkeypatch.setenv("LTH_SSH_CONFIG", "/x/ssh_config")
    assert SshHost("ssh://h", "h", "192.0.2.7").argv("true")[1:3] == ["-F", "/x/ssh_config"]


def test_the_explicit_target_address_is_allowed_and_nothing_else():
    ensure_allowed("192.0.2.7", explicit="192.0.2.7")
    for other in ("192.0.2.8", "example.org"):
        with pytest.raises(HarnessError, match="refusing"):
            ensure_allowed(other, explicit="192.0.2.7")
    with pytest.raises(HarnessError, match="refusing"):
        ensure_allowed("192.0.2.7")                  # the next run, without --target-host


def test_a_remote_nginx_listens_on_its_address_only(tmp_path):
    (tmp_path / "remote").mkdir()
    stage(tmp_path / "remote", listen_address="192.0.2.7")
    conf = (tmp_path / "remote" / "nginx.conf").read_text()
    assert "listen 192.0.2.7:80 backlog=8192;" in conf and "listen 80" not in conf
    (tmp_path / "local").mkdir()
    stage(tmp_path / "local")
    assert "listen 80 backlog=8192;" in (tmp_path / "local" / "nginx.conf").read_text()
    assert (tmp_path / "local" / "html" / "style.css").is_file()


def test_remote_facts_are_parsed_and_missing_ones_are_empty():
    facts = host_facts("hostname=b\nkernel=6.1\ncores=8\nmemory_kib=16384000\nnic=eth1\nnic_speed_mbps=-1\n")
    assert facts["cores"] == 8 and facts["memory_gib"] == 15.6 and facts["nic"] == "eth1"
    assert facts["nic_speed_mbps"] is None and facts["cpu_model"] is None


def test_the_tool_gets_every_cpu_here_and_a_split_is_refused():
    assert not remote_split(None, None).isolated
    with pytest.raises(HarnessError, match="--target-host"):
        remote_split("0", None)


TARGET = ["--target-host", "ssh://root@198.18.2.2"]


@pytest.mark.parametrize("args, message", [
    (["--runtime", "docker", "--target-host", "no-such-context"], "neither an ssh:// URL nor a Docker context"),
    ([*TARGET, "--runtime", "host", "--cpus-target", "0"], "leave them out"),
    (["--runtime", "host", "--generator-host", "ssh://root@198.18.2.3"], "--generator-host needs --target-host"),
    ([*TARGET, "--runtime", "host", "--generator-host", "ssh://root@198.18.2.3", "--capture"],
     "--capture records packets on this machine's side of the link; with --generator-host"),
    ([*TARGET, "--runtime", "host", "--generator-host", "ssh://root@198.18.2.3,ssh://root@198.18.2.3"],
     "a host is named twice"),
    ([*TARGET, "--runtime", "host", "--generator-host", "198.18.2.3"],
     "--generator-host '198.18.2.3': neither an ssh:// URL nor a Docker context"),
])
def test_unsupported_combinations_get_one_line_and_status_2(args, message):
    result = harness("run", "--tools", "wrk", *args, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_a_host_ssh_cannot_reach_stops_before_any_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LTH_SSH_CONFIG", str(tmp_path / "no-such-ssh_config"))   # ssh fails at once
    result = harness("run", "--runtime", "host", "--target-host", "ssh://root@198.18.2.2", "--tools", "wrk",
                     "--scenarios", "scenarios/shootout.yaml:vu20-rtt0.1", "--results-root", str(tmp_path), timeout=60)
    assert result.returncode == 2
    assert "ssh://root@198.18.2.2: ssh failed" in result.stderr and "key-based ssh" in result.stderr
    assert not (tmp_path / "latest").exists()


@pytest.mark.parametrize("recorded, asked", [
    ({"url": "ssh://root@198.18.2.2", "address": "198.18.2.2"}, None),
    ({"url": "ssh://root@198.18.2.2", "address": "198.18.2.2"}, "ssh://root@198.18.2.3"),
    (None, "ssh://root@198.18.2.2"),
])
def test_a_resume_against_another_target_than_the_folders_is_refused(tmp_path, recorded, asked):
    (tmp_path / "environment.json").write_text(json.dumps({"runtime": "host", "target_host": recorded}))
    plan = SimpleNamespace(resume=tmp_path, runtime="host", target_host=asked, runs=[])
    with pytest.raises(HarnessError) as refused:
        check_resume(plan)
    problem = str(refused.value)
    assert problem.startswith(f"cannot resume {tmp_path}: it was measured against")
    assert ("--target-host ssh://root@198.18.2.2" if recorded else "a target on this machine") in problem
    plan.target_host = recorded and recorded["url"]
    check_resume(plan)
