"""``kmigrate controllers``: bad input is one line, exit 2, before any cluster is asked (the controller address
given is closed: a command that asked it would fail with exit 1, not 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from migrate.commands.controllers.app import _release, parse_adds
from migrate.core.controllers.plan import NewController
from migrate.errors import BadInput

CLOSED = "127.0.0.1:1"


def run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_BOOTSTRAP")}
    return subprocess.run([sys.executable, "-m", "migrate", "controllers", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize("args, says", [
    (["--add", "7,8", "--remove", "1", "--bootstrap-controller", CLOSED], "give as many of each"),
    (["--add", "7", "--remove", "1"], "--bootstrap-controller"),
    (["--add", "x", "--remove", "1", "--bootstrap-controller", CLOSED], "--add 'x'"),
    (["--add", "7=c7", "--remove", "1", "--bootstrap-controller", CLOSED, "--stop-command", "stop {name}"], "{id}"),
    (["--add", "7", "--remove", "7", "--bootstrap-controller", CLOSED], "both added and removed"),
    (["--add", "7", "--remove", "1", "--bootstrap-controller", CLOSED, "--kafka-version", "four"], "--kafka-version"),
    (["--add", "7", "--remove", "1", "--bootstrap-controller", CLOSED, "--catch-up-timeout", "0"], "--catch-up-timeout"),
    (["--bootstrap-controller", CLOSED], "nothing to do"),
    (["--add", "7", "--remove", "1", "--bootstrap-controller", "c1:port"], "--bootstrap-controller"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and not r.stdout, r.stderr


def test_adds_take_ids_ranges_and_endpoints():
    assert parse_adds(["7-8", "9=c9:19093"], "CONTROLLER") == (7, 8, NewController(9, "c9", 19093, "CONTROLLER"))
    with pytest.raises(BadInput, match="id=host:port"):
        parse_adds(["x=c9:9093"], "CONTROLLER")


def test_release():
    assert _release("4.1.1") == (4, 1) and _release("3.9") == (3, 9) and _release(None) is None


def _kraft_playbook(tmp_path, with_controllers: bool = True):
    from migrate.sandbox import kraft_layout as kl
    from migrate.sandbox.kraft_cluster import kraft_playbook

    text = kraft_playbook(kl.kraft_spec((3000, 3001), (1,), spare_controller_ids=(3002, 3003)))
    if not with_controllers:
        text = text[:text.index("controllers:")] + text[text.index("migration:"):]
    path = tmp_path / "kraft.yaml"
    path.write_text(text)
    return path


def test_the_playbooks_controllers_section_gives_adds_removes_controllers_and_listener(tmp_path):
    from migrate.commands.controllers.app import _from_playbook
    from migrate.files import load_playbook

    section = load_playbook(_kraft_playbook(tmp_path)).controllers
    add, remove, where, listener = _from_playbook(section, None, None, None, None)
    now = section.bootstrap_now.split(",")
    assert parse_adds(add, listener) == tuple(NewController(c.id, c.host, c.port, listener) for c in section.add)
    assert [c.id for c in section.add] == [3002, 3003] and remove == ["3000,3001"]
    assert where.split(",") == now + [c.address for c in section.add] and listener == section.listener_name
    # flags given win over the playbook
    assert _from_playbook(section, ["9"], ["3000"], "c1:9093", "CTRL") == (["9"], ["3000"], "c1:9093", "CTRL")


def test_a_playbook_without_a_controllers_section_is_refused(tmp_path):
    r = run("--playbook", str(_kraft_playbook(tmp_path, with_controllers=False)))
    assert r.returncode == 2 and "no controllers: section" in r.stderr and len(r.stderr.strip().splitlines()) == 1, \
        r.stderr


def test_controller_config_without_a_host_is_refused(tmp_path):
    r = run("controller-config", "3009", "--playbook", str(_kraft_playbook(tmp_path)))
    assert r.returncode == 2 and "no host for controller 3009" in r.stderr and "controllers.add" in r.stderr, r.stderr
    r = run("controller-config", "3009", "--bootstrap-controller", CLOSED)
    assert r.returncode == 2 and "give --host" in r.stderr, r.stderr


@pytest.mark.parametrize("args, says", [
    ([], "--bootstrap-controller"),
    (["--bootstrap-controller", CLOSED, "--timeout", "0"], "--timeout"),
    (["--bootstrap-controller", CLOSED, "--kafka-version", "four"], "--kafka-version"),
    (["--bootstrap-controller", "c1:port"], "--bootstrap-controller"),
])
def test_upgrade_kraft_version_bad_input_is_one_line_and_exit_2(args, says):
    r = run("upgrade-kraft-version", *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and not r.stdout, r.stderr


def test_upgrade_kraft_version_with_no_controller_answering_is_exit_1():
    r = run("upgrade-kraft-version", "--bootstrap-controller", CLOSED)
    assert r.returncode == 1 and "no KRaft leader answered" in r.stderr, (r.returncode, r.stderr)


def test_upgrade_kraft_version_takes_the_playbooks_voters(tmp_path):
    r = run("upgrade-kraft-version", "--playbook", str(_kraft_playbook(tmp_path, with_controllers=False)))
    assert r.returncode == 2 and "no controllers: section" in r.stderr, r.stderr
    r = run("upgrade-kraft-version")
    assert r.returncode == 2 and "--bootstrap-controller" in r.stderr, r.stderr
