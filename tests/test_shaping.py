import pytest

from harness.errors import HarnessError
from harness.row import rtt_ok
from harness.shaping import choose_shaper, netem_command, netem_limit


def test_netem_command_for_each_profile():
    netns = ["ip", "netns", "exec", "lth-target"]
    assert netem_command(netns, "lth-veth1", 10, netem_limit(20)) == [
        *netns, "tc", "qdisc", "replace", "dev", "lth-veth1", "root", "netem", "delay", "10ms", "limit", "1000"]
    assert netem_command([], "eth0", 50, netem_limit(1000))[-4:] == ["delay", "50ms", "limit", "8000"]
    assert netem_command([], "eth0", 0.5, 1000)[-3] == "0.5ms"


def test_queue_limit_grows_with_vus_beyond_netems_default():
    assert netem_limit(20) == 1000
    assert netem_limit(500) == 4000 and netem_limit(1000) == 8000


def test_shaper_choice():
    assert choose_shaper("auto", needs_shaping=False, netem_ok=False).kind == "none"
    assert choose_shaper("auto", True, netem_ok=True).kind == "netem"
    assert choose_shaper("netem", True, netem_ok=True).kind == "netem"


def test_forcing_netem_without_it_names_the_missing_module():
    with pytest.raises(HarnessError, match="lacks sch_netem.*--shaper toxiproxy"):
        choose_shaper("netem", True, netem_ok=False, netem_error="Specified qdisc kind is unknown")


def test_auto_without_netem_falls_back_to_toxiproxy(monkeypatch, tmp_path):
    binary = tmp_path / "toxiproxy-server"
    binary.write_text("")
    monkeypatch.setattr("harness.shaping.TOXIPROXY_BIN", binary)
    choice = choose_shaper("auto", True, netem_ok=False, netem_error="unknown qdisc")
    assert choice.kind == "toxiproxy" and "netem unavailable" in choice.reason
    binary.unlink()
    with pytest.raises(HarnessError, match="make deps"):
        choose_shaper("auto", True, netem_ok=False)


@pytest.mark.parametrize("measured, target, ok", [
    (10.9, 10, True), (11.1, 10, False), (9.0, 10, True), (8.9, 10, False),
    (55.0, 50, True), (55.1, 50, False), (0.55, 0.1, True), (0.7, 0.1, False),
])
def test_rtt_flag_tolerance_is_max_of_ten_percent_and_half_a_ms(measured, target, ok):
    assert rtt_ok(measured, target) is ok
