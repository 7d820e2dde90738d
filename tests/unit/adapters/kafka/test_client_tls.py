"""kafka-python's TLS from key material held in memory, and Spark's redaction of the secrets it is handed."""

from __future__ import annotations

import datetime
import os
import re
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from migrate.adapters.kafka import client as kafka_adapter
from migrate.adapters.spark.session import DEFAULT_CONF
from migrate.core.clientconfig import ClientSettings


def _material():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "me")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return pem, key_pem


def test_kafka_python_gets_an_ssl_context_from_memory_and_no_file_is_left(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    cert, key = _material()
    s = ClientSettings("a:9093", {"security.protocol": "SSL", "ssl.ca.pem": cert, "ssl.certificate.pem": cert,
                                  "ssl.key.pem": key, "ssl.endpoint.identification.algorithm": ""})
    kw = kafka_adapter.kafka_python_config(s, client_id="kmigrate")
    ctx = kw["ssl_context"]
    assert isinstance(ctx, ssl.SSLContext) and ctx.check_hostname is False and ctx.verify_mode == ssl.CERT_REQUIRED
    assert len(ctx.get_ca_certs()) == 1
    assert not any(k in kw for k in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("memfd", [True, False])
def test_the_private_key_file_is_gone_after_an_error_too(tmp_path, monkeypatch, memfd):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    if not memfd:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with kafka_adapter._private_file("SECRET") as path:
            seen.append(path)
            assert open(path).read() == "SECRET"
            if not memfd:
                assert os.stat(path).st_mode & 0o777 == 0o600
            raise KeyboardInterrupt
    if memfd:
        assert seen[0].startswith("/proc/self/fd/")  # an anonymous memory file: never on disk
    else:
        assert not os.path.exists(seen[0])
    assert list(tmp_path.iterdir()) == []


def test_spark_redacts_the_kafka_options_that_carry_secrets():
    for key in ("spark.redaction.regex", "spark.sql.redaction.options.regex"):
        regex = re.compile(DEFAULT_CONF[key].replace("(?i)", ""), re.IGNORECASE)
        for option in ("kafka.sasl.jaas.config", "kafka.ssl.truststore.password", "kafka.ssl.keystore.password",
                       "kafka.ssl.key.password", "kafka.ssl.keystore.key"):
            assert regex.search(option), (key, option)
        assert not regex.search("kafka.bootstrap.servers")
