"""Issue 18, ZooKeeper SASL: ``--zk-jaas-file`` on a real ZooKeeper with SASL, ACLs and a digest super user.

One SASL_SSL sandbox (1 ZooKeeper and 1 joiner, each with a TLS secureClientPort beside its client port, broker 1): ZooKeeper's ``Server`` JAAS section, brokers logging in
with the ``Client`` section as ``kafka`` and ``zookeeper.set.acl=true`` (so /config/users, the SCRAM
credentials, is readable by ``sasl:kafka`` alone), a digest super user ``super``. kmigrate reads ZooKeeper
through the brokers' own JAAS file, as Kafka's tools take it; the reconfig of the swap needs the super user.
``--zk-client-config`` (Kafka's ``--zk-tls-config-file``, a JKS truststore) reaches the secureClientPort,
and the swap itself runs over it (sessions, four-letter words, the write probe), last in the module.
"""

from __future__ import annotations

import json

import pytest

from migrate.adapters.zookeeper.client import ReconfigRefused, ZooKeeper
from migrate.core.zookeeper.change import Reconfig
from migrate.core.zookeeper.auth import parse_auth
from migrate.files import zk_auth, zk_jaas
from migrate.sandbox.testing import running_sandbox

from cli_support import run

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), spare_zookeeper_ids=(2,), broker_ids=(1,), security="sasl_ssl", zookeeper_tls=True)


@pytest.fixture(scope="module")
def cluster():
    with running_sandbox(SANDBOX) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def jaas(cluster):
    return cluster.security.broker_zookeeper_jaas


def _hosts(cluster) -> str:
    return cluster.zookeeper_connect()


def test_the_jaas_client_login_reads_what_only_sasl_kafka_may_read(cluster, jaas):
    login = zk_jaas(jaas)
    with ZooKeeper.connect(_hosts(cluster), parse_auth(None, login)) as zk:
        acls, _ = zk._zk.get_acls("/config/users")
        assert [(a.id.scheme, a.id.id) for a in acls] == [("sasl", "kafka")]
        assert b"SCRAM-SHA-512" in zk.read("/config/users/kmigrate")
    from kazoo.exceptions import NoAuthError

    with ZooKeeper.connect(_hosts(cluster), None) as zk:
        with pytest.raises(NoAuthError):
            zk._zk.get("/config/users/kmigrate")


def test_inspect_and_joiner_config_log_in_with_the_jaas_file_and_a_wrong_password_is_one_line(
        cluster, jaas, capsys, tmp_path, monkeypatch):
    kafka = ["--bootstrap-server", cluster.bootstrap_servers(spare=False),
             "--command-config", str(cluster.security.properties_file("admin"))]
    code, out, err = run(capsys, "inspect", "--zookeeper", cluster.zookeeper_connect(chroot=True), *kafka,
                         "--zk-jaas-file", str(jaas), "-O", "json")
    assert code == 0, err
    assert [b["id"] for b in json.loads(out)["brokers"]] == [1]
    monkeypatch.setenv("KMIGRATE_ZK_JAAS_FILE", str(jaas))
    code, out, err = run(capsys, "zookeeper", "joiner-config", "2", "--zookeeper", cluster.zookeeper_connect(),
                         "--add", "2=127.0.0.9:2888:3888;2181")
    assert code == 0, err
    assert "server.2=127.0.0.9:2888:3888:observer;2181" in out
    monkeypatch.delenv("KMIGRATE_ZK_JAAS_FILE")
    secret = zk_jaas(jaas).password
    bad = tmp_path / "bad-jaas.conf"
    bad.write_text(jaas.read_text().replace(secret, "not-the-password"))
    code, out, err = run(capsys, "inspect", "--zookeeper", cluster.zookeeper_connect(chroot=True), *kafka,
                         "--zk-jaas-file", str(bad))
    assert code == 2
    assert err.strip().count("\n") == 0 and "refused the login (SASL DIGEST-MD5 as kafka)" in err, err
    assert "not-the-password" not in out + err and secret not in out + err


def test_a_refused_login_is_told_as_refused_however_fast_the_server_drops_it(cluster, jaas, tmp_path):
    """ZooKeeper drops a refused SASL login right after the session is made; kazoo's start() may then end at
    once with a plain time-out (a race). Every attempt must still say the login was refused."""
    secret = zk_jaas(jaas).password
    bad = tmp_path / "bad-jaas.conf"
    bad.write_text(jaas.read_text().replace(secret, "not-the-password"))
    answers = []
    for _ in range(30):
        with pytest.raises(Exception) as refused:
            ZooKeeper.connect(_hosts(cluster), parse_auth(None, zk_jaas(bad)), timeout_s=5)
        answers.append(f"{type(refused.value).__name__}: {refused.value}")
    assert all(a.startswith("BadInput") and "refused the login" in a for a in answers), answers


def test_the_reconfig_needs_the_digest_super_user_not_the_brokers_sasl_identity(cluster, jaas):
    """Which identity each step needs: reading (inspect, plan, joiner-config, the checks) works with the
    brokers' SASL login; the reconfig is refused to it (NoAuth) and accepted with the super user added."""
    login = zk_jaas(jaas)
    superuser = zk_auth(None, cluster.security.zookeeper_auth_file)
    with ZooKeeper.connect(_hosts(cluster), parse_auth(None, login)) as zk:
        config = zk.committed_config()
        with pytest.raises(ReconfigRefused) as refused:
            zk.answer(zk.send_reconfig(Reconfig((config.get(1),), (), config.version)), 15)
        assert refused.value.kind == "no-auth"
        assert zk.committed_config().version == config.version
    with ZooKeeper.connect(_hosts(cluster), parse_auth(superuser, login)) as zk:
        after = zk.answer(zk.send_reconfig(Reconfig((config.get(1),), (), config.version)), 15)
    assert after.version > config.version and after.get(1) == config.get(1)


def test_inspect_over_tls_to_the_secure_client_port_with_a_sasl_login(cluster, jaas, capsys, tmp_path):
    import javaproperties

    config = tmp_path / "zk-tls.properties"
    config.write_text(javaproperties.dumps(cluster.security.zookeeper_tls_client_config()))
    spec = cluster.spec
    secure = ",".join(f"{z.host}:{z.client_port + 1}" for z in spec.zookeepers) + spec.chroot
    kafka = ["--bootstrap-server", cluster.bootstrap_servers(spare=False),
             "--command-config", str(cluster.security.properties_file("admin"))]
    code, out, err = run(capsys, "inspect", "--zookeeper", secure, *kafka, "--zk-client-config", str(config),
                         "--zk-jaas-file", str(jaas), "-O", "json")
    assert code == 0, err
    snapshot = json.loads(out)
    assert [b["id"] for b in snapshot["brokers"]] == [1]
    assert cluster.security.password("store") not in out + err
    code, out, err = run(capsys, "zookeeper", "joiner-config", "2", "--zookeeper", secure, "--zk-client-config",
                         str(config), "--add", "2=127.0.0.9:2888:3888;2181")
    assert code == 0, err
    assert "server.2=127.0.0.9:2888:3888:observer;2181" in out


def test_kraft_precheck_wants_the_sasl_identity_that_owns_the_brokers_znodes(cluster, jaas, capsys, tmp_path):
    """``kmigrate kraft precheck`` (issue 29) on brokers that log in to ZooKeeper as ``kafka`` with
    ``zookeeper.set.acl=true`` (on ZooKeeper's plain client port): without that login the controllers would meet
    NoAuthException, so it refuses (exit 2, one line, nothing changed); given the brokers' JAAS file every check
    passes, and the controllers' config carries zookeeper.set.acl."""
    book = tmp_path / "kraft.yaml"
    book.write_text(f"""
kafka: {{bootstrap_servers: "{cluster.bootstrap_servers(spare=False)}", command_config: "{cluster.security.properties_file('admin')}"}}
zookeeper: {{connect: "{cluster.zookeeper_connect(chroot=True)}"}}
kraft: {{controllers: [{{id: 3001, host: 127.0.0.9}}]}}
""")
    chroot = cluster.spec.chroot

    def state():
        with ZooKeeper.connect(_hosts(cluster), parse_auth(None, zk_jaas(jaas))) as zk:
            return zk.children(f"{chroot}/brokers/ids"), zk.read(f"{chroot}/migration"), zk.read(f"{chroot}/controller")

    before = state()
    code, out, err = run(capsys, "kraft", "precheck", "--playbook", str(book), "-O", "json")
    assert code == 2, (out, err)
    doc = json.loads(out)
    assert doc["refusal"]["check"] == "zookeeper_security" and [c["check"] for c in doc["checks"] if not c["ok"]] == [
        "zookeeper_security"], doc
    assert err.strip().count("\n") == 0 and "belong to the ZooKeeper SASL identity kafka" in err, err
    code, out, err = run(capsys, "kraft", "precheck", "--playbook", str(book), "--zk-jaas-file", str(jaas), "-O", "json")
    assert code == 0, err
    security = json.loads(out)["checks"][5]["message"]
    print(security)
    assert security == ("every controller carries the brokers' ZooKeeper security settings (zookeeper.set.acl); "
                        "SASL login 'kafka' owns the brokers' znodes (start the controllers with that JAAS file)")
    assert cluster.security.password("store") not in out + err
    assert state() == before and before[1] is None


def test_the_swap_over_tls_dials_every_server_at_its_secure_client_port(cluster, jaas, capsys):
    """``kmigrate zookeeper --zk-client-config`` given only the voter's secureClientPort: the joiner's
    readiness, the reconfig, the post-checks and the write probe all go over TLS; the tools' connect string
    is the secure one, the brokers' stays the plaintext one they use."""
    env = cluster.env()  # what `kmigrate sandbox env` exports for --zookeeper-tls
    config = env["ZOOKEEPER_CLIENT_CONFIG"]
    voter, joiner = cluster.spec.zookeepers
    secure = env["ZOOKEEPER_SECURE_CONNECT"]
    assert secure == f"{voter.host}:{voter.client_port + 1}"
    args = ["zookeeper", "--zookeeper", secure, "--zk-client-config", str(config), "--zk-jaas-file", str(jaas),
            "--zk-auth-file", str(cluster.security.zookeeper_auth_file),
            "--add", f"2={joiner.host}:{joiner.quorum_port}:{joiner.election_port};{joiner.client_port}",
            "--bootstrap-server", cluster.bootstrap_servers(spare=False),
            "--command-config", str(cluster.security.properties_file("admin")), "-O", "json"]
    dialled: list[tuple[str, int]] = []
    _record_connections(dialled)
    code, out, err = run(capsys, *args, "--dry-run")
    assert code == 0, err
    dry = json.loads(out)
    assert dry["status"] == "dry-run" and dry["joiners"] == {"2": "ready"}, dry
    code, out, err = run(capsys, *args)
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "reconfigured" and result["voters_after"] == [1, 2], result
    assert result["connect_string"] == f"{voter.host}:{voter.client_port + 1},{joiner.host}:{joiner.client_port + 1}"
    assert result["broker_zookeeper_connect"].startswith(f"{voter.host}:{voter.client_port},{joiner.host}:{joiner.client_port}")
    assert result["checks"]["voters_in_sync"] == [1, 2] and result["checks"]["sentinel_unchanged"] is True
    assert cluster.security.password("store") not in out + err
    # every connection kmigrate opened to a ZooKeeper server (kazoo and the four-letter words are Python
    # sockets, seen by the audit hook) went to a secureClientPort: the plaintext client port was never used
    zk_hosts = {voter.host, joiner.host}
    to_zookeeper = {a for a in dialled if a[0] in zk_hosts and a[1] in (voter.client_port, voter.client_port + 1)}
    assert to_zookeeper == {(voter.host, voter.client_port + 1), (joiner.host, joiner.client_port + 1)}, dialled
    dialled.clear()
    from migrate.files import zk_client_config

    with ZooKeeper.connect(result["connect_string"], parse_auth(None, zk_jaas(jaas), zk_client_config(config))) as zk:
        assert zk.committed_config().voter_ids == (1, 2)


_RECORDING: list[list[tuple[str, int]]] = []


def _record_connections(into: list[tuple[str, int]]) -> None:
    """Record the (host, port) of every Python socket connect from now on (an audit hook cannot be
    removed: one hook for the module, appending to the newest list)."""
    import sys

    if not _RECORDING:
        def hook(event, args):
            if event == "socket.connect" and _RECORDING and isinstance(args[1], tuple):
                _RECORDING[-1].append((args[1][0], args[1][1]))

        sys.addaudithook(hook)
    _RECORDING.append(into)
