"""The secured sandbox's files: SCRAM credentials, modes, and what a broker and a client are given."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import stat

import javaproperties
import jks
import pytest
from cryptography import x509

from migrate.errors import BadInput
from migrate.sandbox import SandboxSpec
from migrate.sandbox import security as sec_mod
from migrate.sandbox.layout import zoo_cfg


def test_scram_credential_verifies_a_client_proof_as_kafka_does():
    cred = dict(kv.split("=", 1) for kv in sec_mod.scram_credential("s3cret", b"salt-bytes", 4096).split(","))
    salt = base64.b64decode(cred["salt"])
    assert salt == b"salt-bytes" and cred["iterations"] == "4096"
    # A client that knows the password derives the same stored key (RFC 5802: StoredKey = H(ClientKey)).
    salted = hashlib.pbkdf2_hmac("sha512", b"s3cret", salt, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    assert base64.b64decode(cred["stored_key"]) == hashlib.sha512(client_key).digest()
    wrong = hashlib.pbkdf2_hmac("sha512", b"other", salt, 4096)
    assert base64.b64decode(cred["stored_key"]) != hashlib.sha512(
        hmac.new(wrong, b"Client Key", hashlib.sha512).digest()).digest()


def test_zookeeper_digest_is_zookeepers_format():
    # ZooKeeper's DigestAuthenticationProvider.generateDigest("super:pw")
    assert sec_mod.zookeeper_digest("super", "pw") == "super:" + base64.b64encode(
        hashlib.sha1(b"super:pw").digest()).decode()


def test_unknown_security_is_bad_input():
    with pytest.raises(BadInput, match="--security 'tls'"):
        SandboxSpec(security="tls")


@pytest.mark.parametrize("security", ["sasl_ssl", "mtls", "sasl_plaintext"])
def test_create_writes_private_files_and_java_client_properties(tmp_path, security):
    sec = sec_mod.create(security, tmp_path / "security", [(1, "127.0.0.1"), (7, "127.0.0.2")])
    assert stat.S_IMODE((tmp_path / "security").stat().st_mode) == 0o700
    for path in (tmp_path / "security").iterdir():
        if path.name not in ("ca.pem",) and not path.name.endswith(".cert.pem"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    props = javaproperties.loads((tmp_path / "security" / "kmigrate.properties").read_text())
    assert props["security.protocol"] == sec_mod.protocol(security)
    if sec_mod.uses_sasl(security):
        assert props["sasl.mechanism"] == "SCRAM-SHA-512"
        assert f'password="{sec.password("kmigrate")}"' in props["sasl.jaas.config"]
    if sec_mod.uses_tls(security):
        trust = jks.KeyStore.load(props["ssl.truststore.location"], props["ssl.truststore.password"])
        ca = x509.load_der_x509_certificate(next(iter(trust.certs.values())).cert)
        broker = sec.broker_properties(7, "127.0.0.2:9092")
        assert broker["ssl.keystore.type"] == "PKCS12" and broker["listeners"].endswith("://127.0.0.2:9092")
        from cryptography.hazmat.primitives.serialization import pkcs12

        store = pkcs12.load_pkcs12(open(broker["ssl.keystore.location"], "rb").read(), broker["ssl.keystore.password"].encode())
        san = store.cert.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "127.0.0.2" in [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
        assert store.cert.certificate.issuer == ca.subject
    if security == "mtls":
        keystore = jks.KeyStore.load(props["ssl.keystore.location"], props["ssl.keystore.password"])
        assert list(keystore.private_keys) == ["kmigrate"]
    else:
        assert "ssl.keystore.location" not in props
    # the super user's digest replaces skipACL; the password itself is in no zoo.cfg line
    cfg = zoo_cfg("/d", "/d/dyn", sec.zoo_cfg_lines())
    assert "skipACL" not in cfg and sec.password("zk_super") not in cfg
    assert "DigestAuthenticationProvider.superDigest=super:" in cfg
    # no JVM option carries a secret
    options = " ".join(sec.zookeeper_jvm_options() + sec.broker_jvm_options())
    assert not any(v in options for v in json.loads((tmp_path / "security" / "secrets.json").read_text()).values())
