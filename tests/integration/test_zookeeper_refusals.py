"""Issue 4: what ``kmigrate zookeeper`` refuses (exit 2, one line, config version unchanged), on a real ensemble.

One ZooKeeper-only sandbox with non-sequential voter ids 1,2,4 and joiners 5,6. The tests leave
the ensemble as they found it, except the last, which turns reconfig off.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from migrate.adapters.zookeeper import fourletter

from zkswap_support import (
    addresses, committed, restart_joiner_with, run_cli, spec_of, wait_until, wipe_server, zk_nodes,
)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 4), spare_zookeeper_ids=(5, 6), broker_ids=())


def _voters(cluster):
    return addresses(zk_nodes(cluster, (1, 2, 4)))


def _swap_args(cluster, *extra):
    return ["zookeeper", "--zookeeper", _voters(cluster),
            "--add", ",".join(spec_of(z) for z in zk_nodes(cluster, (5, 6))), "--remove", "1,2,4", *extra]


def _first_voter(cluster) -> str:
    """One server's address: with reconfig disabled each server keeps its own /zookeeper/config
    version (no reconfig transaction aligns them), so before and after are read on the same one."""
    return addresses(zk_nodes(cluster, (1,)))


def _refused(cluster, args, *needles):
    before = committed(_first_voter(cluster))
    proc = run_cli(args)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    after = committed(_first_voter(cluster))
    assert after.version == before.version and after.same_membership(before)
    return lines[0]


def test_joiner_id_not_greater_than_every_current_id(cluster):
    spare_host = f"{cluster.spec.ip_prefix}.9"
    _refused(cluster, ["zookeeper", "--zookeeper", _voters(cluster), "--add", f"3={spare_host}:2888:3888;2181", "--remove", "1"],
             "joiner id 3 is not greater than every current id [1, 2, 4]")
    # joiner-config refuses it as well
    proc = run_cli(["zookeeper", "joiner-config", "3", "--zookeeper", _voters(cluster), "--add", f"3={spare_host}:2888:3888;2181"])
    assert proc.returncode == 2 and "not greater" in proc.stderr


def test_bad_input_is_one_line_and_exit_2(cluster):
    for args, needle in [
        (["zookeeper", "--zookeeper", _voters(cluster), "--add", "5", "--remove", "1"], "described nowhere"),
        (["zookeeper", "--zookeeper", _voters(cluster), "--add", "5=h:1:2", "--remove", "1"], "client port"),
        (["zookeeper", "--zookeeper", _voters(cluster), "--add", spec_of(zk_nodes(cluster, (5,))[0]), "--remove", "5"],
         "both added and removed"),
        (["zookeeper", "--add", "5=h:1:2;3"], "--zookeeper"),
        (["zookeeper", "--zookeeper", _voters(cluster), "--add", "5=h:1:2;3", "--zk-auth", "nocolon"], "--zk-auth"),
    ]:
        _refused(cluster, args, needle)


def test_a_joiner_that_is_down_is_named_and_nothing_changes(cluster):
    cluster.stop("zookeeper-6")
    try:
        line = _refused(cluster, _swap_args(cluster, "--joiner-timeout", "5"), "joiner 6 never became", "nothing was changed")
        assert zk_nodes(cluster, (6,))[0].host in line
    finally:
        # ZooKeeper rewrote the joiner's config to the committed one, which lacks it: a joiner restarts
        # from the joiner config ("My id 6 not in the peer list" otherwise)
        wipe_server(cluster, zk_nodes(cluster, (6,))[0])
        cluster.start_joiners(zk_nodes(cluster, (6,)))


def test_a_new_config_that_cannot_form_a_quorum_is_refused(cluster):
    """Voter 2 is down: keeping it and adding 5 while removing 1 and 4 gives {2, 5}, which needs both."""
    cluster.stop("zookeeper-2")
    try:
        _refused(cluster, ["zookeeper", "--zookeeper", _voters(cluster), "--add", spec_of(zk_nodes(cluster, (5,))[0]),
                           "--remove", "1,4"], "need 2 up and in sync to form a quorum", "servers [2]", "nothing was changed")
    finally:
        cluster.start("zookeeper-2")


def test_a_joiner_listed_as_participant_is_refused(cluster):
    """Joiners 5 and 6 started with the target config (both participants): an ensemble of their own."""
    z5, z6 = zk_nodes(cluster, (5, 6))
    own = f"{z5.server_line('participant')}\n{z6.server_line('participant')}\n"
    restart_joiner_with(cluster, z5, own)
    restart_joiner_with(cluster, z6, own)
    try:
        cluster.wait_zookeeper([z5.name, z6.name], timeout_s=60)
        _refused(cluster, _swap_args(cluster, "--joiner-timeout", "10"), "runs with a config that lists 5, 6 as participants")
    finally:
        for z in (z5, z6):
            wipe_server(cluster, z)
        cluster.start_joiners([z5, z6])  # proper joiners again
    # with proper joiner configs the same command would now go ahead (dry run: nothing changes)
    proc = run_cli(_swap_args(cluster, "--dry-run"))
    assert proc.returncode == 0, proc.stderr
    assert "joiner 5: ready" in proc.stdout and "joiner 6: ready" in proc.stdout


def test_playbook_gives_the_ensemble_and_the_servers(cluster, tmp_path):
    z = {n.id: n for n in cluster.spec.zookeepers}
    book = tmp_path / "zk.yaml"
    book.write_text(
        "kafka:\n  bootstrap_servers: \"127.0.0.1:9092\"\n"
        f"zookeeper:\n  connect: \"{_voters(cluster)}\"\n  add:\n"
        + "".join(f"    - id: {i}\n      host: {z[i].host}\n" for i in (5, 6))
        + "  remove: [1, 2, 4]\n"
    )
    proc = run_cli(["zookeeper", "--playbook", str(book), "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert f"-remove 1,2,4 -add 'server.5={z[5].host}:2888:3888:participant;{z[5].host}:2181,server.6=" in proc.stdout
    proc = run_cli(["zookeeper", "joiner-config", "6", "--playbook", str(book)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == [f"server.{i}={z[i].host}:2888:3888:observer;{z[i].host}:2181" for i in (5, 6)]


def test_plan_gives_the_change_and_contradicting_flags_are_refused(cluster, tmp_path):
    """``kmigrate zookeeper --plan``: the change the plan recorded (add 5), performed; then undone by hand."""
    from migrate.core.model import ClusterSnapshot, ZkEnsemble, snapshot_to_json

    z5 = zk_nodes(cluster, (5,))[0]
    now = committed(_voters(cluster))
    snapshot = ClusterSnapshot(zookeeper=ZkEnsemble(connect=_voters(cluster), config_version=now.version,
                                                    servers=now.servers, reconfig_enabled=True))
    (tmp_path / "cluster.json").write_text(snapshot_to_json(snapshot))
    (tmp_path / "zk.yaml").write_text(
        f"kafka:\n  bootstrap_servers: \"127.0.0.1:9092\"\nzookeeper:\n  connect: \"{_voters(cluster)}\"\n"
        f"  add:\n    - id: 5\n      host: {z5.host}\n"
    )
    plan_file = str(tmp_path / "plan.json")
    proc = run_cli(["plan", "--playbook", str(tmp_path / "zk.yaml"), "--cluster-file", str(tmp_path / "cluster.json"),
                    "-o", plan_file])
    assert proc.returncode == 0, proc.stderr
    line = f"server.5={z5.host}:2888:3888:participant;{z5.host}:2181"
    doc = json.loads(Path(plan_file).read_text())["zookeeper"]
    assert doc["reconfig_command"] == f"reconfig -v {now.version:x} -add {line}" and doc["reconfig_add"] == [line]

    # the dry run shows the plan's reconfig, sent to the plan's ensemble
    proc = run_cli(["zookeeper", "--plan", plan_file, "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    assert f"reconfig -v {now.version:x} -add '{line}'" in proc.stdout and "joiner 5: ready" in proc.stdout
    # flags that agree are fine; flags that contradict the plan: one line, exit 2, nothing changed
    proc = run_cli(["zookeeper", "--plan", plan_file, "--add", "5", "--zookeeper", _first_voter(cluster), "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    _refused(cluster, ["zookeeper", "--plan", plan_file, "--remove", "1"], "--remove 1 contradicts plan", "it removes none")
    _refused(cluster, ["zookeeper", "--plan", plan_file, "--add", "5,6"], "--add 5,6 contradicts plan", "its joiners are 5")
    _refused(cluster, ["zookeeper", "--plan", plan_file, "--zookeeper", f"{_voters(cluster)}/kafka"],
             "contradicts plan", "drop --zookeeper")

    # performed: 5 becomes a voter
    proc = run_cli(["zookeeper", "--plan", plan_file])
    assert proc.returncode == 0, proc.stderr
    assert "reconfigured" in proc.stdout
    assert committed(_voters(cluster)).voter_ids == (1, 2, 4, 5)
    # a rerun of the plan finds it done
    proc = run_cli(["zookeeper", "--plan", plan_file])
    assert proc.returncode == 0 and "already done" in proc.stdout, proc.stderr

    # leave the ensemble as it was: 5 leaves, then runs as a joiner again
    proc = run_cli(["zookeeper", "--zookeeper", _voters(cluster), "--remove", "5"])
    assert proc.returncode == 0, proc.stderr
    assert committed(_voters(cluster)).voter_ids == (1, 2, 4)
    wipe_server(cluster, z5)
    cluster.start_joiners([z5])


def _restart_voters_with(cluster, edit) -> None:
    voters = [f"zookeeper-{i}" for i in (1, 2, 4)]
    for name in voters:
        cluster.stop(name)
    for name in voters:
        cfg = Path(cluster.nodes[name].dir) / "zoo.cfg"
        cfg.write_text(edit(cfg.read_text()))
    for name in voters:
        cluster.start(name, wait=False)
    cluster.wait_zookeeper(voters, timeout_s=90)
    # settled: every voter serves the same config, unchanged for a few seconds
    seen: list = []

    def settled() -> bool:
        try:
            views = {fourletter.conf_membership(z.host, z.client_port) for z in zk_nodes(cluster, (1, 2, 4))}
        except OSError:
            views = set()
        seen.append(views.pop() if len(views) == 1 else None)
        return len(seen) >= 6 and seen[-1] is not None and len(set(seen[-6:])) == 1

    wait_until(settled, 90, "the ensemble back and settled")
    assert committed(_voters(cluster)).voter_ids == (1, 2, 4)


def test_acl_enforced_needs_zk_auth_of_a_super_user(cluster):
    """With ACLs enforced only a super user may reconfig: refused without --zk-auth, allowed with it."""
    digest = base64.b64encode(hashlib.sha1(b"super:s3cret").digest()).decode()
    _restart_voters_with(cluster, lambda text: text.replace("skipACL=yes", "skipACL=no")
                         + f"DigestAuthenticationProvider.superDigest=super:{digest}\n")
    _refused(cluster, _swap_args(cluster), "NoAuth", "--zk-auth")
    _refused(cluster, _swap_args(cluster, "--zk-auth", "super:wrong"), "NoAuth")
    proc = run_cli(_swap_args(cluster, "--zk-auth", "super:s3cret", "--dry-run"))
    assert proc.returncode == 0, proc.stderr
    assert "reconfig -v" in proc.stdout


def test_reconfig_disabled_is_refused(cluster):
    """Last: restarts the voters with reconfigEnabled=false."""
    _restart_voters_with(cluster, lambda text: text.replace("reconfigEnabled=true", "reconfigEnabled=false"))
    _refused(cluster, _swap_args(cluster), "reconfig is disabled", "reconfigEnabled=true")
