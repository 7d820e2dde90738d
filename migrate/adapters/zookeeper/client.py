"""ZooKeeper adapter: kazoo sessions, ``/zookeeper/config``, reconfig, four-letter words, a sentinel and a write probe.

Only this module talks to ZooKeeper (four-letter words go through ``fourletter``). Every call has
a timeout; an unreachable ensemble is a ``BadInput`` naming the address, never a hang.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
import warnings
import uuid
from contextlib import ExitStack
from functools import lru_cache
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NewConfigNoQuorumError,
    NoAuthError,
    NoNodeError,
    ReconfigDisabledError,
    ReconfigInProcessError,
    SessionExpiredError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState
from kazoo.retry import KazooRetry
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from migrate.adapters.zookeeper import fourletter
from migrate.errors import BadInput
from migrate.core.units import split_host_port
from migrate.adapters.kafka.client import _private_file
from migrate.core.zookeeper.auth import ZkSasl, ZkTls
from migrate.core.zookeeper.config import ConfigError, DynamicConfig, address_key, bracket, parse_config
from migrate.core.zookeeper.change import Reconfig

log = logging.getLogger("kmigrate.zookeeper")
# kazoo reports every dropped connection (expected while servers leave); keep it off the terminal
# unless the application configures logging.
logging.getLogger("kmigrate.kazoo").addHandler(logging.NullHandler())
CONFIG_NODE = "/zookeeper/config"

# Named retry policies (tenacity) for ZooKeeper reads that may meet a leader election.
READ_RETRY = dict(
    retry=retry_if_exception_type((ConnectionLoss, SessionExpiredError, KazooTimeoutError, OSError)),
    stop=stop_after_delay(30),
    wait=wait_fixed(0.5),
    reraise=True,
)
SESSION_RETRY = {"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 1.0}
PROBE_RETRY = {"max_tries": -1, "delay": 0.02, "backoff": 1.0, "max_jitter": 0.0, "max_delay": 0.02}
"""The write probe's reconnection: a pass over every server each 20 ms, its write interval. With the session's own
(0.1 s, then 1.5x more each time, +-40 % jitter) the probe came back up to a few hundred ms after the ensemble
could commit again, and measured kazoo's backoff as part of the stall."""


class Unreachable(BadInput):
    """No ZooKeeper server of the connect string answered (as opposed to a refused login): a caller that can do
    without ZooKeeper (``kraft status`` once it is retired) catches this one."""


class LostAnswer(Exception):
    """The reconfig was sent but its answer never came back (connection lost, session expired, timeout)."""


class ReconfigRefused(Exception):
    """ZooKeeper answered the reconfig with an error; ``reason`` is a one-line explanation."""

    def __init__(self, reason: str, kind: str):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind  # bad-version | in-progress | no-quorum | disabled | no-auth | unimplemented | other


def _address(addr: str) -> tuple[str, int]:
    return split_host_port(addr, None, "address")


def resolve_aliases(addresses: list[str]) -> dict[str, frozenset[str]]:
    """Other spellings (resolved IPs) of each ``host:port``, so a broker's hostname matches a config's IP."""
    out: dict[str, frozenset[str]] = {}
    for a in set(addresses):
        try:
            host, port = split_host_port(a, 2181, "address")
        except BadInput:  # a broker's unreadable zookeeper.connect entry has no other spelling
            continue
        try:
            ips = {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
        except OSError:
            ips = set()
        out[address_key(a)] = frozenset(f"{bracket(ip)}:{port}" for ip in ips)
    return out


# -------------------------------------------------------------- four letters
@dataclass(frozen=True)
class ServerState:
    """What one server says of itself (``srvr`` and ``conf``), or why it could not say."""

    address: str
    mode: str | None = None  # leader | follower | observer | standalone; None when not serving
    zxid: int | None = None
    version: str | None = None
    membership: str | None = None  # its own dynamic config text
    error: str | None = None

    @property
    def serving(self) -> bool:
        return self.mode is not None


@lru_cache(maxsize=4)
def tls_context(tls: ZkTls) -> ssl.SSLContext:
    """The TLS of ``--zk-client-config`` for four-letter words: its CAs (else the system's), its client
    certificate and key when it has them, the host name checked unless the file turned it off."""
    ctx = ssl.create_default_context(cadata=tls.ca_pem) if tls.ca_pem else ssl.create_default_context()
    ctx.check_hostname = tls.check_hostname
    if tls.certificate_pem and tls.key_pem:
        with _private_file(tls.certificate_pem) as cert, _private_file(tls.key_pem) as key:
            ctx.load_cert_chain(cert, key)
    return ctx


def _context(tls: ZkTls | None) -> ssl.SSLContext | None:
    return tls_context(tls) if tls is not None else None


def server_state(address: str, with_membership: bool = False, timeout_s: float = 2.0,
                 tls: ZkTls | None = None) -> ServerState:
    """``srvr`` (and optionally ``conf``) of one server, over TLS when ``tls`` is given (its
    secureClientPort); an unreachable one is reported, not raised."""
    host, port = _address(address)
    context = _context(tls)
    try:
        stat = fourletter.srvr(host, port, timeout_s, context)
    except ssl.SSLError as exc:
        return ServerState(address, error=f"unreachable over TLS ({exc.reason or exc}): check --zk-client-config's "
                                          "truststore and that this is the server's secureClientPort")
    except OSError as exc:
        return ServerState(address, error=f"unreachable ({exc.strerror or exc})")
    except ValueError:
        # up but not serving (no quorum, or srvr not whitelisted)
        return ServerState(address, error="not serving (no quorum, or srvr is not in 4lw.commands.whitelist)")
    membership = None
    if with_membership:
        try:
            membership = fourletter.conf_membership(host, port, timeout_s, context)
        except OSError:
            membership = None
    return ServerState(address, stat.mode, stat.zxid, stat.version, membership)


def leader_mntr(address: str, timeout_s: float = 2.0, tls: ZkTls | None = None) -> dict[str, str]:
    host, port = _address(address)
    try:
        return fourletter.mntr(host, port, timeout_s, _context(tls))
    except OSError:
        return {}


# ------------------------------------------------------------------- session
class ZooKeeper:
    """One kazoo session on an ensemble (the connect string without chroot)."""

    def __init__(self, hosts: str, auth: list[tuple[str, str]] | None = None, timeout_s: float = 15.0,
                 connection_retry: dict | None = None):
        self.hosts = hosts
        self.auth = auth or []
        self.timeout_s = timeout_s
        digest = [a for a in self.auth if isinstance(a, tuple)]
        sasl = [a.kazoo_options() for a in self.auth if isinstance(a, ZkSasl)]
        tls = next((a for a in self.auth if isinstance(a, ZkTls)), None)
        self._files = ExitStack()  # kazoo reads PEM from files at every (re)connection: private ones, for the session
        pem = {k: self._files.enter_context(_private_file(v)) for k, v in (
            ("ca", tls.ca_pem), ("certfile", tls.certificate_pem), ("keyfile", tls.key_pem)) if v} if tls else {}
        self._zk = KazooClient(
            hosts=hosts,
            timeout=max(10.0, timeout_s),
            auth_data=digest or None,
            sasl_options=sasl[0] if sasl else None,
            use_ssl=tls is not None,
            verify_certs=True,
            check_hostname=bool(tls and tls.check_hostname),
            **pem,
            connection_retry=KazooRetry(**(connection_retry or SESSION_RETRY)),
            command_retry=KazooRetry(max_tries=3, delay=0.2),
            logger=logging.getLogger("kmigrate.kazoo"),
        )
        # A refused SASL login drops the connection right after the session is made: kazoo goes CONNECTED,
        # AUTH_FAILED, CLOSED, and start() may then report a plain time-out at once. Remember the refusal.
        self.login_refused = False
        session_callback = self._zk._session_callback

        def _remember_refusal(state, _callback=session_callback):
            if state == KeeperState.AUTH_FAILED:
                self.login_refused = True
            _callback(state)
        self._zk._session_callback = _remember_refusal

    @classmethod
    def connect(cls, hosts: str, auth: list[tuple[str, str]] | None = None, timeout_s: float = 15.0,
                connection_retry: dict | None = None) -> "ZooKeeper":
        """Open a session or raise BadInput naming the servers (and the auth when it was refused)."""
        zk = cls(hosts, auth, timeout_s, connection_retry)
        try:
            with warnings.catch_warnings():  # kazoo's UserWarning about a chroot not created yet (the brokers
                warnings.filterwarnings("ignore", "No chroot path exists", UserWarning)  # make it) on the terminal
                zk._zk.start(timeout=timeout_s)
            if zk.auth:  # a refused login may answer the first request only: ask one now
                zk._zk.exists("/")
        except (AuthFailedError, KazooTimeoutError, KazooException, OSError) as exc:
            zk.close()
            if isinstance(exc, AuthFailedError) or zk.login_refused:
                who = "; ".join(f"SASL {a.mechanism} as {a.username}" if isinstance(a, ZkSasl) else f"{a[0]} as "
                                f"{a[1].split(':', 1)[0]}" for a in zk.auth if not isinstance(a, ZkTls))
                raise BadInput(f"ZooKeeper at {hosts} refused the login ({who}): check the username and password "
                               "of --zk-jaas-file (section Client) or --zk-auth") from None
            raise Unreachable(
                f"cannot reach ZooKeeper at {hosts} within {timeout_s:.0f} s ({type(exc).__name__}): "
                "check --zookeeper (host:port, comma separated) and that the servers are up"
                + ("; TLS (--zk-client-config) needs ZooKeeper's secureClientPort and a truststore holding its CA"
                   if any(isinstance(a, ZkTls) for a in zk.auth) else "; a TLS secureClientPort needs --zk-client-config")
            ) from None
        return zk

    def close(self) -> None:
        try:
            self._zk.stop()
            self._zk.close()
        except Exception:  # closing a broken session must not hide the real error
            pass
        finally:
            self._files.close()

    def __enter__(self) -> "ZooKeeper":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- config
    @retry(**READ_RETRY)
    def committed_config(self) -> DynamicConfig:
        """The last committed dynamic config (``sync`` first so a follower is not behind the leader)."""
        self._zk.sync(CONFIG_NODE)
        data, _ = self._zk.get(CONFIG_NODE)
        text = data.decode("utf-8", "replace")
        if not text.strip():
            raise BadInput(
                f"{CONFIG_NODE} is empty on {self.hosts}: the ensemble has no dynamic config "
                "(ZooKeeper below 3.5.0, or a standalone server); dynamic reconfiguration is not possible"
            )
        try:
            return parse_config(text)
        except ConfigError as exc:
            raise BadInput(f"cannot read {CONFIG_NODE} on {self.hosts}: {exc}") from None

    def send_reconfig(self, rc: Reconfig):
        """Send the reconfig and return kazoo's async result without waiting for the answer."""
        return self._zk.reconfig_async(rc.joining_arg, rc.leaving_arg, None, -1 if rc.from_version is None else rc.from_version)

    def all_sent(self) -> bool:
        """True once every queued request has been written to the socket (the crash hook waits for it)."""
        return not getattr(self._zk, "_queue", None)

    def drop_connection(self) -> None:
        """Drop this session's connection (kazoo reconnects): the fault behind a lost answer, for tests."""
        from kazoo.protocol.connection import _CONNECTION_DROP

        self._zk._call(_CONNECTION_DROP, self._zk.handler.async_result())

    @staticmethod
    def answer(result, timeout_s: float) -> DynamicConfig:
        """The new config from a reconfig's answer; LostAnswer or ReconfigRefused otherwise."""
        try:
            data, _ = result.get(timeout=timeout_s)
        except (ConnectionLoss, SessionExpiredError, KazooTimeoutError) as exc:
            raise LostAnswer(type(exc).__name__) from None
        except BadVersionError:
            raise ReconfigRefused("the committed config changed since it was read (BadVersion)", "bad-version") from None
        except ReconfigInProcessError:
            raise ReconfigRefused("another reconfig is in progress", "in-progress") from None
        except NewConfigNoQuorumError:
            raise ReconfigRefused(
                "ZooKeeper refused: no quorum of the new config is connected and in sync with the leader", "no-quorum"
            ) from None
        except ReconfigDisabledError:
            raise ReconfigRefused("reconfig is disabled (reconfigEnabled=false)", "disabled") from None
        except NoAuthError:
            raise ReconfigRefused(
                "this session may not reconfig (NoAuth): give --zk-auth user:password of a ZooKeeper super user "
                "(or an ACL granting write on /zookeeper/config)", "no-auth"
            ) from None
        except UnimplementedError:
            raise ReconfigRefused("the server does not implement reconfig (standalone mode?)", "unimplemented") from None
        except KazooException as exc:
            raise ReconfigRefused(f"ZooKeeper refused the reconfig: {type(exc).__name__} {exc}", "other") from None
        return parse_config(data.decode("utf-8", "replace"))

    def probe_reconfig(self) -> str | None:
        """Whether this session may reconfig, without changing anything; None when it may.

        Sends a reconfig guarded by ``from_config=0``: no committed config has version 0, so an
        enabled ensemble answers BadVersion (nothing applied); a disabled one ReconfigDisabled; a
        standalone server Unimplemented. ZooKeeper 3.8 checks the ACL of /zookeeper/config last,
        after the version, so a NoAuth shows only in the answer to the real (guarded) reconfig,
        which then changes nothing.
        """
        try:
            self._zk.reconfig_async(None, None, None, 0).get(timeout=self.timeout_s)
        except BadVersionError:
            return None
        except ReconfigInProcessError:
            return None  # enabled and authorized; the in-progress change is handled later
        except ReconfigDisabledError:
            return (
                "reconfig is disabled on this ensemble (reconfigEnabled=false): set reconfigEnabled=true "
                "in every server's zoo.cfg and restart them one at a time"
            )
        except NoAuthError:
            return (
                "this session may not reconfig (NoAuth): give --zk-auth user:password of a ZooKeeper super user "
                "(or an ACL granting write on /zookeeper/config)"
            )
        except UnimplementedError:
            return "the ensemble does not implement reconfig (standalone mode: set standaloneEnabled=false)"
        except (ConnectionLoss, SessionExpiredError, KazooTimeoutError) as exc:
            return f"could not ask the ensemble whether reconfig is enabled ({type(exc).__name__}); retry"
        except KazooException as exc:
            return f"the reconfig probe failed: {type(exc).__name__} {exc}"
        return "the reconfig probe with version 0 was accepted, which no ensemble should do: stopping"

    # --------------------------------------------------------------- znodes
    @retry(**READ_RETRY)
    def children(self, path: str) -> list[str] | None:
        try:
            return self._zk.get_children(path)
        except NoNodeError:
            return None

    @retry(**READ_RETRY)
    def read(self, path: str) -> bytes | None:
        try:
            data, _ = self._zk.get(path)
            return data
        except NoNodeError:
            return None

    def write(self, path: str, data: bytes, acl: list[tuple[str, str, str]] | None = None) -> None:
        """Set or create ``path``; a created node (and any missing parent) gets ``acl`` when given:
        ``(scheme, id, permissions)`` entries such as ``("sasl", "kafka", "cdrwa")``, ``("world", "anyone", "r")``."""
        if self._zk.exists(path):
            self._zk.set(path, data)
        elif acl is None:
            self._zk.create(path, data, makepath=True)
        else:
            from kazoo.security import make_acl

            made = [make_acl(scheme, ident, read="r" in p, write="w" in p, create="c" in p, delete="d" in p,
                             admin="a" in p) for scheme, ident, p in acl]
            self._zk.create(path, data, acl=made, makepath=True)

    def delete(self, path: str) -> None:
        try:
            self._zk.delete(path, recursive=True)
        except NoNodeError:
            pass

    def registered_brokers(self, chroot: str) -> dict[str, list[int]]:
        """Broker ids registered in ZooKeeper: under ``chroot`` and, to catch a forgotten chroot, under
        the root and every top-level znode. Returns {chroot: ids} for every place with brokers."""
        found: dict[str, list[int]] = {}
        places = [chroot or ""]
        for child in self.children("/") or []:
            if child != "zookeeper":
                places.append("/" + child)
        places.append("")
        for place in dict.fromkeys(places):
            ids = self.children(f"{place}/brokers/ids")
            if ids:
                found[place] = sorted(int(i) for i in ids if i.lstrip("-").isdigit())
        return found


def broker_config_znodes(hosts: str, chroot: str, auth: list | None, brokers: list[int],
                         timeout_s: float = 15.0) -> dict[int, bytes | None]:
    """Each broker's dynamic config znode (``<chroot>/config/brokers/<id>``; None when absent), read in one
    session. BadInput when ZooKeeper cannot be reached or refuses the login."""
    with ZooKeeper.connect(hosts, auth, timeout_s) as zk:
        return {b: zk.read(f"{chroot}/config/brokers/{b}") for b in brokers}


MIGRATION_ZNODES = ("/cluster/id", "/controller", "/controller_epoch", "/migration")


def migration_znodes(hosts: str, chroot: str, auth: list | None, timeout_s: float = 15.0,
                     probe_s: float | None = None) -> dict[str, object]:
    """What a ZooKeeper-to-KRaft migration shows in ZooKeeper, read in one session under ``chroot``: the raw data of
    ``/cluster/id``, ``/controller``, ``/controller_epoch`` and ``/migration`` (None when absent), the children of
    ``/brokers/ids`` (``"ids"``) and each topic's assignment znode (``"topics"``: name -> data). BadInput when
    ZooKeeper cannot be reached (:class:`Unreachable`) or refuses the login. With ``probe_s``, a connect string none
    of whose servers accepts a TCP connection within ``probe_s`` is :class:`Unreachable` at once (a stopped ensemble
    refuses in milliseconds; kazoo would retry it until ``timeout_s``)."""
    if probe_s is not None and not any_accepting(hosts, probe_s):
        raise Unreachable(f"cannot reach ZooKeeper at {hosts}: no server accepts a connection")
    with ZooKeeper.connect(hosts, auth, timeout_s) as zk:
        out: dict[str, object] = {path: zk.read(chroot + path) for path in MIGRATION_ZNODES}
        out["ids"] = sorted(int(i) for i in zk.children(f"{chroot}/brokers/ids") or [] if i.lstrip("-").isdigit())
        out["topics"] = {t: zk.read(f"{chroot}/brokers/topics/{t}") for t in zk.children(f"{chroot}/brokers/topics") or []}
        return out


def any_accepting(hosts: str, timeout_s: float = 2.0) -> bool:
    """Whether a server of ``hosts`` (``h1:2181,h2:2181``, no chroot) accepts a TCP connection within ``timeout_s``."""
    for entry in (h.strip() for h in hosts.split(",") if h.strip()):
        try:
            host, port = split_host_port(entry, 2181, "--zookeeper")
            with socket.create_connection((host.strip("[]"), port), timeout=timeout_s):
                return True
        except (OSError, BadInput):
            continue
    return False


def znodes_with_versions(hosts: str, chroot: str, auth: list | None, paths: tuple[str, ...],
                         timeout_s: float = 15.0) -> dict[str, tuple[bytes, int] | None]:
    """Each of ``paths`` under ``chroot``: (data, version), or None when absent; one session."""
    out: dict[str, tuple[bytes, int] | None] = {}
    with ZooKeeper.connect(hosts, auth, timeout_s) as zk:
        for path in paths:
            try:
                data, stat = zk._zk.get(chroot + path)
                out[path] = (data or b"", stat.version)
            except NoNodeError:
                out[path] = None
    return out


def rollback_migration_znodes(hosts: str, chroot: str, auth: list | None, *, controller_version: int | None,
                              migration_version: int | None, epoch: tuple[int, int] | None,
                              timeout_s: float = 15.0) -> bool:
    """The KRaft rollback's one ZooKeeper transaction under ``chroot``: ``/controller_epoch`` set to ``epoch[0]``
    (when given: (value, version read)), ``/controller`` deleted (when ``controller_version`` is given) and
    ``/migration`` deleted (when ``migration_version`` is given), each conditional on the version read. True when
    committed; False when a znode moved or went since it was read (nothing written: read again)."""
    with ZooKeeper.connect(hosts, auth, timeout_s) as zk:
        t = zk._zk.transaction()
        if epoch is not None:
            t.set_data(chroot + "/controller_epoch", str(epoch[0]).encode(), version=epoch[1])
        if controller_version is not None:
            t.delete(chroot + "/controller", version=controller_version)
        if migration_version is not None:
            t.delete(chroot + "/migration", version=migration_version)
        try:
            results = t.commit()
        except NoAuthError as exc:
            raise BadInput(f"ZooKeeper at {hosts} refused the rollback's writes under {chroot or '/'} ({exc}): give the "
                           "brokers' ZooKeeper identity (--zk-auth, --zk-jaas-file)") from exc
        failed = [r for r in results if isinstance(r, Exception)]
        if any(isinstance(r, NoAuthError) for r in failed):
            raise BadInput(f"ZooKeeper at {hosts} refused the rollback's writes under {chroot or '/'}: give the "
                           "brokers' ZooKeeper identity (--zk-auth, --zk-jaas-file)")
        return not failed


def committed_config_from(addresses: list[str], auth: list[tuple[str, str]] | None, timeout_s: float = 15.0) -> DynamicConfig:
    """Read the committed config through a fresh session on ``addresses`` (the lost-answer check)."""
    with ZooKeeper.connect(",".join(addresses), auth, timeout_s) as zk:
        return zk.committed_config()


# ------------------------------------------------------------- write probe
@dataclass
class StallReport:
    """What the write probe saw: the longest time no write could be committed."""

    writes_ok: int = 0
    writes_failed: int = 0
    longest_stall_ms: float = 0.0
    stall_started_s: float | None = None  # seconds after the probe started
    duration_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)


class WriteProbe:
    """A small writer loop on its own session: one ``set`` every ``interval_s``, timing the gaps between commits.

    The session knows every server (old and new), so it fails over as servers leave; a write not
    answered within ``write_timeout_s`` makes it drop the connection and go to another server, and a
    lost connection is retried on every server each 20 ms (:data:`PROBE_RETRY`), so the figure is the
    ensemble's and not a client's backoff. The longest gap between two committed writes (or from the
    last one to the stop) is the write stall.
    """

    def __init__(self, addresses: list[str], auth: list[tuple[str, str]] | None, path: str, interval_s: float = 0.02,
                 write_timeout_s: float = 2.0, failover: list[str] | None = None):
        self.addresses = addresses
        self.failover = failover  # connected to one of addresses first, then these for every reconnection
        self.auth = auth
        self.path = path
        self.interval_s = interval_s
        self.write_timeout_s = write_timeout_s
        self.report = StallReport()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._zk: ZooKeeper | None = None
        self._t0 = 0.0

    def start(self, timeout_s: float = 15.0) -> None:
        self._zk = ZooKeeper.connect(",".join(self.addresses), self.auth, timeout_s, connection_retry=PROBE_RETRY)
        if self.failover:
            self._zk._zk.set_hosts(",".join(self.failover))  # the connection stays; the next one may go anywhere
        self._zk.write(self.path, b"0")
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="kmigrate-write-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self._zk is not None
        zk = self._zk._zk
        last_ok = time.monotonic()
        n = 0
        while not self._stop.is_set():
            n += 1
            try:
                try:
                    zk.set_async(self.path, str(n).encode()).get(timeout=self.write_timeout_s)
                except KazooTimeoutError:
                    # the server holds the write without answering: move to another server, as a
                    # client with a short request timeout would, rather than wait for the session's
                    # read timeout (that would measure kazoo, not the ensemble)
                    self._zk.drop_connection()
                    raise
                now = time.monotonic()
                self._gap(now - last_ok, last_ok)
                last_ok = now
                self.report.writes_ok += 1
            except Exception as exc:  # every failure is a stall being measured, not an error
                self.report.writes_failed += 1
                name = type(exc).__name__
                self.report.errors[name] = self.report.errors.get(name, 0) + 1
                time.sleep(0.01)
                continue
            self._stop.wait(self.interval_s)
        self._gap(time.monotonic() - last_ok, last_ok)

    @property
    def running(self) -> bool:
        """The writer loop is alive (the runner stops waiting for writes once it is not)."""
        return self._thread is not None and self._thread.is_alive()

    def _gap(self, gap_s: float, since: float) -> None:
        if gap_s * 1000 > self.report.longest_stall_ms:
            self.report.longest_stall_ms = round(gap_s * 1000, 1)
            self.report.stall_started_s = round(since - self._t0, 3)

    def stop(self) -> StallReport:
        """Stop the loop (idempotent) and return what it measured."""
        if self._stop.is_set():
            return self.report
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=90)
        self.report.duration_s = round(time.monotonic() - self._t0, 3)
        if self._zk is not None:
            try:  # bounded: when no server it knows serves any more, kazoo would wait for one forever
                self._zk._zk.delete_async(self.path).get(timeout=5.0)
            except Exception:
                pass
            self._zk.close()
        return self.report


def new_marker(prefix: str) -> str:
    """A unique znode path under ``/kmigrate`` for a sentinel or a probe."""
    return f"/kmigrate/{prefix}-{uuid.uuid4().hex[:12]}"


def sasl_owners(hosts: str, chroot: str, auth: list | None, broker_ids: list[int], timeout_s: float = 15.0) -> tuple[str, ...]:
    """The SASL identities the ACLs of the brokers' registration znodes (``<chroot>/brokers/ids/N``) name, sorted:
    with ``zookeeper.set.acl=true`` and a SASL login, each broker creates its znodes owned by ``sasl:<user>``; empty
    when they are open or owned by another scheme. BadInput when ZooKeeper cannot be reached or refuses the login."""
    owners: set[str] = set()
    with ZooKeeper.connect(hosts, auth, timeout_s) as zk:
        for b in broker_ids:
            try:
                acls, _stat = zk._zk.get_acls(f"{chroot}/brokers/ids/{b}")
            except NoNodeError:
                continue
            owners |= {a.id.id for a in acls if a.id.scheme == "sasl"}
    return tuple(sorted(owners))
