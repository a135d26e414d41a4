"""Durations as a user types them (issue 49): 300, 300s, 5m, 1h; the ETA beyond a day."""
import argparse

import pytest

from harness.cli import _seconds, build_parser
from harness.suite.console import eta_text


@pytest.mark.parametrize("text, seconds", [("300", 300), ("300s", 300), ("5m", 300), ("1h", 3600), (" 2M ", 120)])
def test_a_duration_takes_a_unit(text, seconds):
    assert _seconds(text) == seconds
    assert build_parser().parse_args(["run", "--duration", text]).duration == seconds


@pytest.mark.parametrize("text, said", [("5x", "such as 300, 300s, 5m or 1h"), ("1.5s", "whole seconds"),
                                        ("0", "> 0"), ("m", "such as")])
def test_a_bad_duration_says_why(text, said):
    with pytest.raises(argparse.ArgumentTypeError, match=said):
        _seconds(text)


def test_the_eta_shows_days_beyond_24_hours():
    """`make bench-all REPEAT=3` of the whole shootout is ~35 h: it printed 11:00:00 (a clock wrapped at a day)."""
    assert eta_text(35 * 3600) == "1 d 11:00:00"
    assert eta_text(86_399) == "23:59:59" and eta_text(86_400) == "1 d 00:00:00" and eta_text(59.6) == "00:01:00"
