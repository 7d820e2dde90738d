"""Reading the files an operator names: the playbook, ``--command-config`` client properties, the plan,
verify snapshots (read, and written with ``-o``), a running canary's live report.

The core parses text and never opens a file; this module opens them, and turns a missing or
unreadable file into a one-line :class:`BadInput` that names it.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import javaproperties

from migrate.core.clientconfig import ClientSettings, check_bootstrap
from migrate.core.clientconfig import client_settings as _client_settings
from migrate.core.playbook import Playbook, parse_playbook
from migrate.core.plan.document import Plan, plan_from_json
from migrate.core.verify.snapshot import Snapshot, snapshot_from_json
from migrate.errors import BadInput

if TYPE_CHECKING:
    from migrate.core.report.live import LiveSignal


def load_command_config(path: str | Path | None) -> dict[str, str]:
    """Read a ``client.properties`` file (Java properties syntax) as it is written."""
    if path is None:
        return {}
    p = Path(path)
    try:
        with open(p, encoding="utf-8") as f:
            props = javaproperties.load(f)
    except FileNotFoundError:
        raise BadInput(f"--command-config {p}: no such file") from None
    except (OSError, ValueError) as exc:
        raise BadInput(f"--command-config {p}: cannot read it as Java properties ({exc})") from None
    return dict(props)


def client_settings(bootstrap_servers: str | None, command_config: str | Path | None = None,
                    extra: dict[str, str] | None = None) -> ClientSettings:
    """The client settings of ``--bootstrap-server`` and the ``--command-config`` file (and playbook extras),
    with the key and trust stores they name opened in memory (:func:`open_stores`)."""
    check_bootstrap(bootstrap_servers)
    props = load_command_config(command_config)
    source = f"--command-config {command_config}" if command_config else "playbook kafka.client"
    pem = open_stores({**(extra or {}), **props}, source)
    settings = _client_settings(bootstrap_servers, props, extra, source, pem)
    for name in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "sasl.kerberos.keytab"):
        path = settings.settings.get(name)  # files librdkafka opens itself: a missing one is a traceback there
        if path and not os.path.isfile(os.path.expanduser(path)):
            raise BadInput(f"{source}: {name} {path}: no such file")
    return settings


def _store_bytes(props: dict[str, str], setting: str, source: str) -> bytes:
    path = Path(os.path.expanduser(props[setting]))
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{source}: {setting} {path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{source}: {setting} {path}: cannot read it ({exc.strerror})") from None


def open_stores(props: dict[str, str], source: str) -> dict[str, str]:
    """The trust and key stores named by Java client properties, opened in memory: ``ssl.ca.pem``,
    ``ssl.certificate.pem`` and ``ssl.key.pem`` for librdkafka (``migrate.core.keystores``). JKS,
    PKCS12 and PEM stores, from files (``*.location``) or inline (``ssl.truststore.certificates``,
    ``ssl.keystore.key`` with ``ssl.keystore.certificate.chain``). Nothing is written anywhere."""
    from migrate.core import keystores

    pem: dict[str, str] = {}
    try:
        if "ssl.truststore.certificates" in props:
            pem["ssl.ca.pem"] = keystores.truststore_pem(props["ssl.truststore.certificates"].encode(), None,
                                                         "ssl.truststore.certificates")
        elif "ssl.truststore.location" in props:
            pem["ssl.ca.pem"] = keystores.truststore_pem(_store_bytes(props, "ssl.truststore.location", source),
                                                         props.get("ssl.truststore.password"))
        material = None
        if "ssl.keystore.key" in props:
            material = keystores.pem_key_material(props["ssl.keystore.key"],
                                                  props.get("ssl.keystore.certificate.chain", ""),
                                                  props.get("ssl.key.password"))
        elif "ssl.keystore.location" in props:
            material = keystores.keystore_material(_store_bytes(props, "ssl.keystore.location", source),
                                                   props.get("ssl.keystore.password"), props.get("ssl.key.password"))
    except BadInput as exc:
        if str(exc).startswith(source):
            raise
        raise BadInput(f"{source}: {exc}") from None
    if material is not None:
        pem["ssl.certificate.pem"] = material.certificate_pem
        pem["ssl.key.pem"] = material.key_pem
    return pem


def load_playbook(path: str | os.PathLike[str]) -> Playbook:
    """Read, parse and validate a playbook file; read its ``kafka.command_config`` file too.

    A relative ``command_config`` is taken relative to the playbook's folder.
    Raises :class:`BadInput` (one line) when a file is missing or invalid.
    """
    path = os.fspath(path)
    name = path  # as given: the runbook names it, so its commands run from where plan ran
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise BadInput(f"playbook {path} not found: give the path of a playbook (see playbooks/)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"playbook {path} cannot be read ({exc.__class__.__name__}: {exc}): check the path and permissions") from None
    playbook = parse_playbook(text, name)
    cc = playbook.kafka.command_config
    if cc is None:
        return playbook
    cc_path = os.path.expanduser(cc)
    if not os.path.isabs(cc_path):
        cc_path = os.path.join(os.path.dirname(os.path.abspath(path)), cc_path)
    try:
        with open(cc_path, encoding="utf-8") as fh:
            props = javaproperties.load(fh)
    except FileNotFoundError:
        raise BadInput(f"playbook {name}: kafka.command_config: file {cc_path} not found: fix the path (relative paths start at the playbook's folder)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"playbook {name}: kafka.command_config: cannot read {cc_path} as Java properties ({exc})") from None
    kafka = replace(playbook.kafka, command_config=cc_path, command_config_properties=dict(props))
    return replace(playbook, kafka=kafka)


def read_text(path: str | os.PathLike[str], label: str, hint: str = "") -> str:
    """A UTF-8 file's text; a missing or unreadable one is a one-line BadInput that begins with ``label``."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{label}: no such file" + (f" ({hint})" if hint else "")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{label}: cannot read it ({exc})") from None


def load_plan(path: str | os.PathLike[str]) -> "Plan":
    """Read a plan written by ``kmigrate plan`` (``--plan``); BadInput when it is missing or unreadable."""
    text = read_text(path, f"--plan {path}", "write one with kmigrate plan")
    return plan_from_json(text, str(path))


def read_snapshot(path: str | Path) -> Snapshot:
    """Read a snapshot file (BadInput when missing, unreadable or not ours)."""
    p = Path(path)
    text = read_text(p, f"snapshot {p}")
    return snapshot_from_json(text, f"snapshot {p}")


def check_writable(path: Path, option: str = "--out", example: str = "before.json") -> None:
    """BadInput when ``option path`` cannot be written as a file (no such directory, or a directory)."""
    if not path.parent.is_dir():
        raise BadInput(f"{option} {path}: directory {path.parent} does not exist; create it or choose another path")
    if path.is_dir():
        raise BadInput(f"{option} {path} is a directory: give a file name like {example}")


def write_whole(path: Path, text: str, what: str, option: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file renamed over it)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise BadInput(f"cannot write {what} to {path} ({exc}): choose a writable {option} path") from None


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole and readable by its owner only from its creation on (it may hold passwords or
    keys): a temporary 0600 file, renamed over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    tmp.replace(path)


def write_snapshot(snapshot: Snapshot, path: Path) -> None:
    """Write the snapshot to ``path`` whole (a temporary file renamed over it)."""
    write_whole(path, snapshot.to_json(), "the snapshot", "--out")


def read_mirror_configs(paths: list[Path]) -> tuple[list[tuple[str, dict[str, str]]], list[tuple[str, object]]]:
    """The files of ``kmigrate mirror lint``: (mm2.properties files as Java properties, connector JSON
    documents), each with its name. A file whose text starts with ``{`` or ``[`` is JSON."""
    properties: list[tuple[str, dict[str, str]]] = []
    documents: list[tuple[str, object]] = []
    for path in paths:
        text = read_text(path, str(path), "give an mm2.properties or connector JSON file")
        if text.lstrip()[:1] in ("{", "["):
            try:
                documents.append((str(path), json.loads(text)))
            except ValueError as exc:
                raise BadInput(f"{path}: not valid JSON ({exc}): fix the connector config") from None
            continue
        try:
            properties.append((str(path), dict(javaproperties.loads(text))))
        except ValueError as exc:
            raise BadInput(f"{path}: cannot read it as Java properties ({exc})") from None
    return properties, documents


def zk_auth(given: str | None, file: str | Path | None) -> str | None:
    """The ZooKeeper digest ``user:password`` of ``--zk-auth`` or of the file ``--zk-auth-file`` names (one
    line ``user:password``, kept off the command line and out of ``ps``). The secret is never echoed."""
    if file is None:
        return given
    if given:
        raise BadInput("give either --zk-auth or --zk-auth-file, not both")
    p = Path(file)
    try:
        lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except FileNotFoundError:
        raise BadInput(f"--zk-auth-file {p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"--zk-auth-file {p}: cannot read it ({type(exc).__name__})") from None
    if len(lines) != 1 or ":" not in lines[0] or lines[0].startswith(":"):
        raise BadInput(f"--zk-auth-file {p}: expected one line user:password (ZooKeeper digest authentication)")
    return lines[0]


def zk_jaas(file: str | Path | None):
    """The ZooKeeper SASL login of ``--zk-jaas-file`` (a JAAS file with a ``Client`` section, as Kafka's
    tools take with ``-Djava.security.auth.login.config``), or None. The secret is never echoed."""
    from migrate.core.zookeeper.auth import jaas_client_login

    import os
    import re
    import shlex

    what = "--zk-jaas-file"
    if file is None:  # as Kafka's tools: $KAFKA_OPTS' -Djava.security.auth.login.config, used if it has a Client section
        try:
            opts = shlex.split(os.environ.get("KAFKA_OPTS", ""))
        except ValueError:
            opts = []
        found = [m.group(1) for o in opts if (m := re.fullmatch(r"-Djava\.security\.auth\.login\.config=(.+)", o))]
        if not found:
            return None
        file, what = found[-1], "$KAFKA_OPTS -Djava.security.auth.login.config"
    p = Path(file)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{what} {p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{what} {p}: cannot read it ({type(exc).__name__})") from None
    if what != "--zk-jaas-file" and not re.search(r"(^|[\s;}])Client\s*\{", text):
        return None  # the JVM's ZooKeeper client would not log in either
    return jaas_client_login(text, f"{what} {p}")


def zk_client_config(file: str | Path | None):
    """The TLS of ``--zk-client-config`` (Kafka's ``--zk-tls-config-file``: ``zookeeper.ssl.*``), stores
    opened in memory, or None (no file, or ``zookeeper.ssl.client.enable`` not true)."""
    import javaproperties

    from migrate.core.zookeeper.auth import ZkTls, zk_client_settings

    if file is None:
        return None
    source = f"--zk-client-config {file}"
    try:
        props = dict(javaproperties.loads(Path(file).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise BadInput(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{source}: cannot read it as Java properties ({type(exc).__name__})") from None
    enabled, stores, check_hostname = zk_client_settings(props, source)
    if not enabled:
        return None
    try:
        pem = open_stores(stores, source)
    except BadInput as exc:  # name the settings as the file does
        raise BadInput(str(exc).replace(f"{source}: ssl.", f"{source}: zookeeper.ssl.")) from None
    return ZkTls(pem.get("ssl.ca.pem"), pem.get("ssl.certificate.pem"), pem.get("ssl.key.pem"), check_hostname)


def read_live_report(path: str | Path) -> "LiveSignal":
    """A running ``kmigrate canary --report FILE``'s live section (:mod:`migrate.core.report.live`).
    ValueError saying what is wrong: missing, unreadable, not JSON, final (the canary stopped), no live section."""
    from migrate.core.report.live import LiveSignal

    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError("it does not exist") from None
    except OSError as exc:
        raise ValueError(f"it cannot be read ({exc.strerror or exc})") from None
    except ValueError:
        raise ValueError("it is not JSON") from None
    if isinstance(doc, dict) and doc.get("final"):
        raise ValueError("it is a final report: that canary has stopped")
    return LiveSignal.parse(doc)


def check_live_report(path: str | Path, now_unix: float, fresh_s: float) -> "LiveSignal":
    """:func:`read_live_report` for ``--canary-report``, also rewritten within ``fresh_s``: BadInput (one line) else."""
    how = (f"start `kmigrate canary --bootstrap-server ... --report {path}` first and keep it running, or leave out "
           "--canary-report (kmigrate then runs its own canary)")
    try:
        live = read_live_report(path)
    except ValueError as exc:
        raise BadInput(f"--canary-report {path}: {exc}: {how}") from None
    if live.age_s(now_unix) > fresh_s:
        raise BadInput(f"--canary-report {path} was last written {live.age_s(now_unix):.0f} s ago (a running canary "
                       f"rewrites it every second): {how}")
    return live
