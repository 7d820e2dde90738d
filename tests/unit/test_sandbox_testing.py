"""The test harness's loopback prefixes: under pytest-xdist each worker draws from a slice of its own."""

import random

import pytest

from migrate.sandbox import testing


@pytest.fixture(autouse=True)
def _no_forced_prefix(monkeypatch):
    monkeypatch.delenv("KMIGRATE_TEST_IP_PREFIX", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)


def test_one_process_draws_from_every_second_octet():
    assert testing.worker_octets() == range(1, 255)


@pytest.mark.parametrize("count", [2, 3, 4, 8])
def test_workers_slices_are_disjoint_and_inside_127(monkeypatch, count):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(count))
    slices = []
    for i in range(count):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{i}")
        slices.append(set(testing.worker_octets()))
    assert all(len(s) >= 254 // count for s in slices)
    assert len(set().union(*slices)) == sum(len(s) for s in slices)  # no octet in two slices
    assert set().union(*slices) <= set(range(1, 255))


def test_a_worker_name_not_of_xdist_falls_back_to_every_octet(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "master")
    assert testing.worker_octets() == range(1, 255)


def test_a_prefix_is_in_the_workers_slice_and_never_handed_out_twice(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setattr(testing, "_handed_out", set())
    monkeypatch.setattr(testing, "port_free", lambda host, port: True)
    rng = random.Random(1)
    prefixes = [testing.free_ip_prefix(2, rng) for _ in range(50)]
    assert len(set(prefixes)) == 50
    assert all(int(p.split(".")[1]) in testing.worker_octets() for p in prefixes)


def test_the_forced_prefix_wins(monkeypatch):
    monkeypatch.setenv("KMIGRATE_TEST_IP_PREFIX", "127.9.9")
    assert testing.free_ip_prefix() == testing.free_ip_prefix() == "127.9.9"
