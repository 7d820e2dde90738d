"""Key and trust stores (JKS, PKCS12, PEM) opened in memory by migrate.files, as a Java tool takes them."""

from __future__ import annotations

import datetime

import javaproperties
import jks
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from migrate.errors import BadInput
from migrate.files import client_settings


def _cert(name: str, key, issuer=None, issuer_key=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer or subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(issuer_key or key, hashes.SHA256()))


@pytest.fixture(scope="module")
def pki():
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("ca", ca_key)
    key = ec.generate_private_key(ec.SECP256R1())
    return ca, key, _cert("client", key, ca.subject, ca_key)


def _der(c):
    return c.public_bytes(serialization.Encoding.DER)


def _pkcs8(key, encryption=serialization.NoEncryption(), encoding=serialization.Encoding.DER):
    return key.private_bytes(encoding, serialization.PrivateFormat.PKCS8, encryption)


def _write(tmp_path, props):
    path = tmp_path / "client.properties"
    path.write_text(javaproperties.dumps(props))
    return path


def _key_pem_of(settings):
    return serialization.load_pem_private_key(settings.settings["ssl.key.pem"].encode(), None)


def test_jks_stores_as_a_java_tool_takes_them(tmp_path, pki):
    ca, key, cert = pki
    jks.KeyStore.new("jks", [jks.TrustedCertEntry.new("ca", _der(ca))]).save(str(tmp_path / "t.jks"), "tpass")
    ks = jks.KeyStore.new("jks", [jks.PrivateKeyEntry.new("me", [_der(cert), _der(ca)], _pkcs8(key), "pkcs8")])
    ks.private_keys["me"].encrypt("kpass")  # a key password other than the store's
    ks.save(str(tmp_path / "k.jks"), "spass")
    path = _write(tmp_path, {"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "t.jks"),
                             "ssl.truststore.password": "tpass", "ssl.keystore.location": str(tmp_path / "k.jks"),
                             "ssl.keystore.password": "spass", "ssl.key.password": "kpass"})
    s = client_settings("a:9092", path)
    assert x509.load_pem_x509_certificate(s.settings["ssl.ca.pem"].encode()) == ca
    assert x509.load_pem_x509_certificates(s.settings["ssl.certificate.pem"].encode()) == [cert, ca]
    assert _key_pem_of(s).private_numbers() == key.private_numbers()
    assert not any(k.startswith(("ssl.truststore", "ssl.keystore")) or k == "ssl.key.password" for k in s.settings)
    assert s.spark_options()["kafka.ssl.keystore.location"] == str(tmp_path / "k.jks")  # Spark: as given


def test_pkcs12_stores(tmp_path, pki):
    ca, key, cert = pki
    enc = serialization.BestAvailableEncryption(b"p12pass")
    (tmp_path / "k.p12").write_bytes(pkcs12.serialize_key_and_certificates(b"me", key, cert, [ca], enc))
    (tmp_path / "t.p12").write_bytes(pkcs12.serialize_key_and_certificates(b"t", None, None, [ca], enc))
    path = _write(tmp_path, {"ssl.truststore.location": str(tmp_path / "t.p12"), "ssl.truststore.type": "PKCS12",
                             "ssl.truststore.password": "p12pass", "ssl.keystore.location": str(tmp_path / "k.p12"),
                             "ssl.keystore.type": "PKCS12", "ssl.keystore.password": "p12pass"})
    s = client_settings("a:9092", path)
    assert x509.load_pem_x509_certificate(s.settings["ssl.ca.pem"].encode()) == ca
    assert _key_pem_of(s).private_numbers() == key.private_numbers()


def test_pem_stores_from_files_and_inline_with_an_encrypted_key(tmp_path, pki):
    ca, key, cert = pki
    pem = serialization.Encoding.PEM
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(pem))
    enc_key = _pkcs8(key, serialization.BestAvailableEncryption(b"kp"), pem).decode()
    (tmp_path / "me.pem").write_text(enc_key + cert.public_bytes(pem).decode())
    by_file = client_settings("a:9092", _write(tmp_path, {
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "ca.pem"),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "me.pem"), "ssl.key.password": "kp"}))
    inline = client_settings("a:9092", _write(tmp_path, {
        "ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca.public_bytes(pem).decode(),
        "ssl.keystore.type": "PEM", "ssl.keystore.key": enc_key, "ssl.keystore.certificate.chain":
            cert.public_bytes(pem).decode(), "ssl.key.password": "kp"}))
    for s in (by_file, inline):
        assert x509.load_pem_x509_certificate(s.settings["ssl.certificate.pem"].encode()) == cert
        assert _key_pem_of(s).private_numbers() == key.private_numbers()
        assert "ssl.key.password" not in s.settings  # the key is already open


@pytest.mark.parametrize("store, props, wanted", [
    ("t.jks", {"ssl.truststore.password": "wrong"}, "ssl.truststore.location: the store does not open with the given password"),
    ("t.jks", {}, "needs its password: set ssl.truststore.password"),
    ("nothing.jks", {"ssl.truststore.password": "tpass"}, "ssl.truststore.location .*nothing.jks: no such file"),
    ("junk.jks", {"ssl.truststore.password": "tpass"}, "not a JKS, PKCS12 or PEM store"),
])
def test_a_store_that_does_not_open_is_one_line_naming_the_setting(tmp_path, pki, store, props, wanted):
    ca, _, _ = pki
    jks.KeyStore.new("jks", [jks.TrustedCertEntry.new("ca", _der(ca))]).save(str(tmp_path / "t.jks"), "tpass")
    (tmp_path / "junk.jks").write_bytes(b"\x01\x02not a store")
    path = _write(tmp_path, {"ssl.truststore.location": str(tmp_path / store), **props})
    with pytest.raises(BadInput, match=wanted) as err:
        client_settings("a:9092", path)
    assert str(err.value).startswith(f"--command-config {path}: ") and "tpass" not in str(err.value)


def test_a_wrong_key_password_in_a_jks_keystore(tmp_path, pki):
    ca, key, cert = pki
    ks = jks.KeyStore.new("jks", [jks.PrivateKeyEntry.new("me", [_der(cert)], _pkcs8(key), "pkcs8")])
    ks.save(str(tmp_path / "k.jks"), "spass")
    path = _write(tmp_path, {"ssl.keystore.location": str(tmp_path / "k.jks"), "ssl.keystore.password": "spass",
                             "ssl.key.password": "nope"})
    with pytest.raises(BadInput, match="private key does not open.*ssl.key.password"):
        client_settings("a:9092", path)
