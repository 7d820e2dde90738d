"""core/units.py: durations, rates and sizes, host:port and connect strings."""

import pytest

from migrate.core.units import format_bytes, format_duration, format_rate, parse_connect, parse_duration, parse_rate, split_host_port
from migrate.errors import BadInput


def test_parse_connect_with_chroot_and_default_port():
    assert parse_connect("h1:2181,h2:2182/kafka") == ((("h1", 2181), ("h2", 2182)), "/kafka")
    assert parse_connect("h1") == ((("h1", 2181),), "")
    assert parse_connect("[::1]:2181") == ((("::1", 2181),), "")


@pytest.mark.parametrize("bad", ["", "h1:2181,,h2", "h1:abc", "h1:0", ":2181"])
def test_parse_connect_errors_are_one_line(bad):
    with pytest.raises(BadInput) as exc:
        parse_connect(bad)
    assert "\n" not in exc.value.message


@pytest.mark.parametrize("text, expected", [
    ("50MB/s", 50_000_000), ("10MiB/s", 10 * 1024 * 1024), ("1000000", 1_000_000), (1_000_000, 1_000_000),
    ("1.5GB/s", 1_500_000_000), ("2 GiB/s", 2 * 1024**3), ("50M", 50_000_000), ("50MB", 50_000_000),
    ("1MB/s", 1_000_000), ("1000KB/s", 1_000_000), ("5mb/s", None),
])
def test_parse_rate(text, expected):
    if expected is None:
        with pytest.raises(BadInput, match="bits"):
            parse_rate(text)
    else:
        assert parse_rate(text) == expected


@pytest.mark.parametrize("text", ["999999", "100KB/s", "0", "fast", "-5MB/s", "10 MB/min", ""])
def test_parse_rate_refuses(text):
    with pytest.raises(BadInput) as exc:
        parse_rate(text)
    assert "\n" not in exc.value.message


def test_durations():
    assert parse_duration("90s", "--x") == 90
    assert parse_duration("5m", "--x") == 300
    assert parse_duration("500ms", "--x") == 0.5
    assert parse_duration("2", "--x") == 2
    for bad in ("0", "-1s", "soon", "1d"):
        with pytest.raises(BadInput):
            parse_duration(bad, "--x")


def test_format_duration():
    assert format_duration(59) == "59s" and format_duration(7384) == "2h 3m" and format_duration(90000) == "1d 1h"


def test_format_rates_and_sizes():
    assert format_bytes(1_500_000) == "1.5 MB" and format_bytes(999) == "999 B" and format_rate(50_000_000) == "50 MB/s"


def test_split_host_port():
    assert split_host_port("h:9092") == ("h", 9092)
    assert split_host_port("[::1]:2181") == ("::1", 2181)
    assert split_host_port("h", 2181) == ("h", 2181)
    for bad in ("h", "h:x", "[::1", ":1"):
        with pytest.raises(BadInput):
            split_host_port(bad)
