"""Runs last (file order): after the whole suite nothing the harness created may remain."""
import subprocess
from pathlib import Path

from harness.runtimes.docker import docker_available


def lines(argv: list[str]) -> list[str]:
    result = subprocess.run(argv, capture_output=True, text=True)
    return [line for line in result.stdout.splitlines() if line.strip()]


def test_no_namespace_veth_proxy_container_or_network_is_left_behind():
    assert [ns for ns in lines(["ip", "netns", "list"]) if ns.startswith("lth-")] == []
    assert [link for link in lines(["ip", "-o", "link", "show"]) if "lth-" in link] == []
    assert lines(["pgrep", "-f", "toxiproxy-server"]) == []
    assert lines(["pgrep", "-f", "lth-capture.pcap"]) == []               # tcpdump of --capture
    assert lines(["pgrep", "-f", "/tmp/lth-target-"]) == []              # an nginx master of the host runtime
    assert [p for p in lines(["pgrep", "-P", "1", "-f", "nginx: worker"])] == []  # orphaned nginx workers
    assert list(Path("/tmp").glob("lth-target-*")) == []
    assert lines(["pgrep", "-x", "wrk"]) == [] and lines(["pgrep", "-x", "ab"]) == []
    if docker_available() is not None:
        assert lines(["docker", "ps", "-aq", "--filter", "label=lth"]) == []
        assert lines(["docker", "network", "ls", "-q", "--filter", "label=lth"]) == []


def test_no_qdisc_was_added_to_the_root_namespace():
    qdiscs = "\n".join(lines(["tc", "qdisc", "show"]))
    assert "netem" not in qdiscs
