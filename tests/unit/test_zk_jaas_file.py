"""``--zk-jaas-file``: the ZooKeeper SASL login of a JAAS file's ``Client`` section, as Kafka's tools read it."""

from __future__ import annotations

import pytest

from migrate.core.zookeeper.auth import ZkSasl, parse_auth
from migrate.errors import BadInput
from migrate.files import zk_jaas

SECRET = 'p}{;"x'
JAAS = """// the brokers' file
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required user_kafka="other";
};
/* the client */ Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="kafka"
  password="p}{;\\"x";
};
"""


def test_the_client_section_gives_a_digest_md5_login_and_no_repr_shows_the_password(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    f = tmp_path / "jaas.conf"
    f.write_text(JAAS)
    login = zk_jaas(f)
    assert login == ZkSasl("kafka", SECRET)
    assert login.kazoo_options() == {"mechanism": "DIGEST-MD5", "username": "kafka", "password": SECRET}
    assert SECRET not in repr(login) and SECRET not in repr(parse_auth("super:pw", login)[1:])
    assert parse_auth("super:pw", login) == [("digest", "super:pw"), login]
    assert zk_jaas(None) is None


BAD = [
    ("Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"b\"; };", "no Client section"),
    ("Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal=\"k\"; };",
     "logs in with Kerberos"),
    ("Client { org.example.Other required username=\"a\" password=\"b\"; };", "is not org.apache.zookeeper"),
    ("Client { org.apache.zookeeper.server.auth.DigestLoginModule required username=\"a\"; };", "password missing"),
    ("Client { org.apache.zookeeper.server.auth.DigestLoginModule required username=\"a\" password=\"hunter2 };",
     "no Client section"),
    ("Client { org.apache.zookeeper.server.auth.DigestLoginModule required username= password=\"hunter2\"; };",
     "expected key=\"value\""),
]


@pytest.mark.parametrize("text, says", BAD)
def test_bad_jaas_is_one_line_naming_the_file_never_the_secret(tmp_path, text, says):
    f = tmp_path / "jaas.conf"
    f.write_text(text)
    with pytest.raises(BadInput) as err:
        zk_jaas(f)
    assert says in err.value.message and str(f) in err.value.message
    assert "hunter2" not in err.value.message and "\n" not in err.value.message


def test_missing_file(tmp_path):
    with pytest.raises(BadInput, match="--zk-jaas-file .*: no such file"):
        zk_jaas(tmp_path / "absent")


def test_kafka_opts_login_config_is_honoured_only_when_it_has_a_client_section(tmp_path, monkeypatch):
    f = tmp_path / "jaas.conf"
    f.write_text(JAAS)
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config={f} -Dx=y")
    assert zk_jaas(None) == ZkSasl("kafka", SECRET)
    f.write_text(BAD[0][0])
    assert zk_jaas(None) is None
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={tmp_path / 'absent'}")
    with pytest.raises(BadInput, match=r"\$KAFKA_OPTS -Djava.security.auth.login.config .*: no such file"):
        zk_jaas(None)
    monkeypatch.setenv("KAFKA_OPTS", "-Xmx1g")
    assert zk_jaas(None) is None


# --zk-client-config: Kafka's --zk-tls-config-file names (the pure mapping: tests/unit/core/zookeeper/test_auth.py)
from migrate.files import zk_client_config  # noqa: E402


def test_zk_client_config_file(tmp_path):
    f = tmp_path / "zk.properties"
    f.write_text("zookeeper.ssl.client.enable=false\n")
    assert zk_client_config(f) is None and zk_client_config(None) is None
    f.write_text(f"zookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.location={tmp_path / 'absent.jks'}\n")
    with pytest.raises(BadInput, match=r"--zk-client-config .*: zookeeper.ssl.truststore.location .*absent.jks: no such file"):
        zk_client_config(f)
    with pytest.raises(BadInput, match="no such file"):
        zk_client_config(tmp_path / "absent.properties")
