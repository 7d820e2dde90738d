"""``kmigrate zookeeper --dry-run`` ends with the exact command that applies it: without --dry-run, and
without --force unless a check passed only because of it."""

from __future__ import annotations

import pytest

import migrate.runner.zookeeper.change as runner
from migrate.cli import main
from migrate.runner.zookeeper.request import ZooKeeperResult

FORCED = "broker 3 points only at servers 1,2,3 that this change removes (--force)"


def dry_run(warnings: list[str]) -> ZooKeeperResult:
    return ZooKeeperResult(status="dry-run", committed_before="", committed_after=None, version_before="100000000",
                           version_after=None, voters_before=[1, 2, 3], voters_after=[4, 5, 6], removed=[1, 2, 3],
                           connect_string="zk4:2181", broker_zookeeper_connect=None, warnings=list(warnings),
                           next_steps=["run the same command without --dry-run to apply it"])


def run(monkeypatch, capsys, warnings: list[str], *args: str) -> str:
    monkeypatch.setattr(runner, "run_zookeeper_change", lambda request, progress=None: dry_run(warnings))
    with pytest.raises(SystemExit) as exit_:
        main(["zookeeper", *args])
    assert exit_.value.code == 0
    return capsys.readouterr().out


ARGS = ("--zookeeper", "zk1:2181/kafka", "--add", "4=zk4:2888:3888;2181", "--remove", "1,2,3",
        "--bootstrap-server", "kafka1:9092")


def test_force_that_no_check_needed_is_left_out(monkeypatch, capsys):
    out = run(monkeypatch, capsys, [], *ARGS, "--dry-run", "--force")
    line = next(ln for ln in out.splitlines() if "apply it with:" in ln)
    assert line.strip() == ("1. apply it with: kmigrate zookeeper --zookeeper zk1:2181/kafka --add "
                            "'4=zk4:2888:3888;2181' --remove 1,2,3 --bootstrap-server kafka1:9092 "
                            "(--force left out: no check needed it)")


def test_force_a_check_needed_is_kept_with_the_reason(monkeypatch, capsys):
    out = run(monkeypatch, capsys, [FORCED], "--remove", "1,2,3", "--zookeeper", "zk1:2181", "--force", "--dry-run",
              "-O", "json")
    assert '"apply it with: kmigrate zookeeper --zookeeper zk1:2181 --remove 1,2,3 --force --output json ' \
           '(--force is still needed: ' + FORCED + ')"' in out
    assert "--dry-run" not in out.split("apply it with:")[1].split('"')[0]


def test_a_password_is_not_echoed(monkeypatch, capsys):
    out = run(monkeypatch, capsys, [], *ARGS, "--zk-auth", "super:s3cret", "--dry-run")
    assert "--zk-auth super:PASSWORD" in out and "s3cret" not in out


def test_a_done_swap_prints_the_stall_where_servers_stay_and_what_a_leaving_servers_client_waited(monkeypatch, capsys):
    done = dry_run([])
    done.status, done.version_after, done.write_stall_ms, done.leaving_write_stall_ms = "reconfigured", "1000002f8", 176.4, 899.8
    monkeypatch.setattr(runner, "run_zookeeper_change", lambda request, progress=None: done)
    with pytest.raises(SystemExit) as exit_:
        main(["zookeeper", *ARGS])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "write stall: 176 ms (longest time a write could not be committed, on a server that stays)" in out
    assert "a client of a leaving server waited 900 ms (until that server dropped it and it wrote through another)" in out
