"""Java key and trust stores (JKS, JCEKS, PKCS12) and PEM files opened in memory, as PEM text for librdkafka.

Operators hand kmigrate the stores their Java clients use (``ssl.truststore.location`` /
``ssl.keystore.location`` with ``*.password`` and ``*.type``). librdkafka takes PEM text
(``ssl.ca.pem``, ``ssl.certificate.pem``, ``ssl.key.pem``), so the stores are opened here, from the
bytes ``migrate.files`` read, and never written anywhere in another form. The key comes out
unencrypted, in memory only. Pure: bytes in, text out; a store that does not open is a
:class:`BadInput` naming the setting, never the password.

The format is taken from the bytes, not from ``*.type`` (Java's own JKS loader reads PKCS12 files
too, and many ``.jks`` files are PKCS12 since Java 9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from migrate.errors import BadInput

_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_JCEKS_MAGIC = b"\xce\xce\xce\xce"
_PEM_KEY = re.compile(r"-----BEGIN ([A-Z ]*PRIVATE KEY)-----.*?-----END \1-----", re.DOTALL)


@dataclass(frozen=True)
class KeyMaterial:
    """A client's private key (PKCS8 PEM, unencrypted) and its certificate chain (PEM, leaf first)."""

    key_pem: str
    certificate_pem: str

    def __repr__(self) -> str:  # never print a key
        return "KeyMaterial([hidden])"


def _pem(der: bytes) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    return x509.load_der_x509_certificate(der).public_bytes(Encoding.PEM).decode()


def _key_pem(key) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def _open_java_store(data: bytes, password: str | None, setting: str):
    """A pyjks KeyStore of JKS/JCEKS ``data``, keys still encrypted; BadInput when it does not open."""
    import jks

    if password is None:
        raise BadInput(f"{setting}: a JKS store needs its password: set {setting.rsplit('.', 1)[0]}.password")
    try:
        return jks.KeyStore.loads(data, password, try_decrypt_keys=False)
    except jks.util.KeystoreSignatureException:
        raise BadInput(f"{setting}: the store does not open with the given password: check "
                       f"{setting.rsplit('.', 1)[0]}.password") from None
    except Exception as exc:  # pyjks raises several kinds for a damaged file
        raise BadInput(f"{setting}: not a readable JKS store ({type(exc).__name__})") from None


def _open_pkcs12(data: bytes, password: str | None, setting: str):
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        if data[:1] != b"\x30":  # not DER at all
            raise BadInput(f"{setting}: not a JKS, PKCS12 or PEM store: check the file and "
                           f"{setting.rsplit('.', 1)[0]}.type") from None
        raise BadInput(f"{setting}: the PKCS12 store does not open with the given password (or is damaged): check "
                       f"{setting.rsplit('.', 1)[0]}.password") from None


def _is_java(data: bytes) -> bool:
    return data[:4] in (_JKS_MAGIC, _JCEKS_MAGIC)


def _is_pem(data: bytes) -> bool:
    return b"-----BEGIN " in data[:4096]


def truststore_pem(data: bytes, password: str | None, setting: str = "ssl.truststore.location") -> str:
    """Every certificate of a trust store as PEM text (what ``ssl.ca.pem`` takes)."""
    if _is_pem(data):
        return _certificates_of_pem(data, setting)
    if _is_java(data):
        store = _open_java_store(data, password, setting)
        ders = [c.cert for c in store.certs.values()]
        ders += [der for pk in store.private_keys.values() for _, der in pk.cert_chain]
    else:
        p12 = _open_pkcs12(data, password, setting)
        ders = [c.certificate.public_bytes(_der()) for c in p12.additional_certs]
        if p12.cert is not None:
            ders.append(p12.cert.certificate.public_bytes(_der()))
    if not ders:
        raise BadInput(f"{setting}: the store holds no certificate to trust")
    return "".join(_pem(d) for d in ders)


def _der():
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.DER


def keystore_material(data: bytes, store_password: str | None, key_password: str | None,
                      setting: str = "ssl.keystore.location") -> KeyMaterial:
    """The (one) private key and certificate chain of a key store. ``key_password`` defaults to the
    store's, as in Java clients (``ssl.key.password``)."""
    if _is_pem(data):
        return _key_material_of_pem(data, key_password, setting)
    if _is_java(data):
        store = _open_java_store(data, store_password, setting)
        if len(store.private_keys) != 1:
            raise BadInput(f"{setting}: the store holds {len(store.private_keys)} private keys: kmigrate needs "
                           "exactly one (export the client's key into a store of its own)")
        entry = next(iter(store.private_keys.values()))
        try:
            entry.decrypt(key_password if key_password is not None else store_password)
        except Exception:
            raise BadInput(f"{setting}: the private key does not open with the given password: check "
                           "ssl.key.password") from None
        from cryptography.hazmat.primitives.serialization import load_der_private_key

        key = load_der_private_key(entry.pkey_pkcs8, password=None)
        chain = "".join(_pem(der) for _, der in entry.cert_chain)
        return KeyMaterial(_key_pem(key), chain)
    p12 = _open_pkcs12(data, store_password, setting)
    if p12.key is None or p12.cert is None:
        raise BadInput(f"{setting}: the PKCS12 store holds no private key with its certificate")
    from cryptography.hazmat.primitives.serialization import Encoding

    chain = [p12.cert.certificate] + [c.certificate for c in p12.additional_certs]
    return KeyMaterial(_key_pem(p12.key), "".join(c.public_bytes(Encoding.PEM).decode() for c in chain))


def _certificates_of_pem(data: bytes, setting: str) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise BadInput(f"{setting}: no PEM certificate could be read from it") from None
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _key_material_of_pem(data: bytes, key_password: str | None, setting: str,
                         chain: bytes | None = None) -> KeyMaterial:
    """A PEM key store: the key (possibly encrypted with ``key_password``) and the certificates, in one
    text (``ssl.keystore.location`` of type PEM) or two (``ssl.keystore.key`` and ``.certificate.chain``)."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    found = _PEM_KEY.search(data.decode("ascii", "replace"))
    if found is None:
        raise BadInput(f"{setting}: no PEM private key in it")
    try:
        key = load_pem_private_key(found.group(0).encode(), key_password.encode() if key_password else None)
    except (ValueError, TypeError):
        raise BadInput(f"{setting}: the PEM private key does not open (check ssl.key.password)") from None
    return KeyMaterial(_key_pem(key), _certificates_of_pem(chain if chain is not None else data, setting))


def pem_key_material(key: str, chain: str, key_password: str | None,
                     setting: str = "ssl.keystore.key") -> KeyMaterial:
    """``ssl.keystore.type=PEM`` with the key and the chain given inline."""
    return _key_material_of_pem(key.encode(), key_password, setting, chain.encode())
