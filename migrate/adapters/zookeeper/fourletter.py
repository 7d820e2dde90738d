"""ZooKeeper four-letter words (``srvr``, ``mntr``, ``conf``) over a plain socket, or over TLS to a
secureClientPort (ZooKeeper's Netty server answers them there too).

The server must whitelist them (``4lw.commands.whitelist=srvr,mntr,conf,...``).
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass


def send_word(host: str, port: int, word: str, timeout_s: float = 2.0, tls: ssl.SSLContext | None = None) -> str:
    """Send one four-letter word and return the whole answer; raises OSError when unreachable (a refused
    TLS handshake is an ``ssl.SSLError``, an OSError too)."""
    with socket.create_connection((host, port), timeout=timeout_s) as raw:
        sock = tls.wrap_socket(raw, server_hostname=host) if tls is not None else raw
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


@dataclass(frozen=True)
class ServerStat:
    """What ``srvr`` says of one server."""

    version: str  # "3.8.6"
    mode: str  # leader | follower | observer | standalone
    zxid: int
    node_count: int | None


def parse_srvr(text: str) -> ServerStat:
    """Parse the answer of ``srvr``.

    >>> parse_srvr("Zookeeper version: 3.8.6-abc, built on x\\nZxid: 0x10000002a\\nMode: follower\\nNode count: 5\\n").mode
    'follower'
    """
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()
    if "mode" not in fields:
        raise ValueError(f"not a srvr answer: {text.strip()[:120]!r}")
    version = fields.get("zookeeper version", "").split("-", 1)[0].split(",", 1)[0].strip()
    zxid = int(fields.get("zxid", "0x0"), 16)
    node_count = int(fields["node count"]) if fields.get("node count", "").isdigit() else None
    return ServerStat(version=version, mode=fields["mode"], zxid=zxid, node_count=node_count)


def srvr(host: str, port: int, timeout_s: float = 2.0, tls: ssl.SSLContext | None = None) -> ServerStat:
    """``srvr`` of one server; raises OSError when unreachable, ValueError when not serving."""
    return parse_srvr(send_word(host, port, "srvr", timeout_s, tls))


def mntr(host: str, port: int, timeout_s: float = 2.0, tls: ssl.SSLContext | None = None) -> dict[str, str]:
    """``mntr`` of one server as a dict (``zk_server_state``, ``zk_zxid``... ``zk_synced_followers`` on a leader)."""
    out = {}
    for line in send_word(host, port, "mntr", timeout_s, tls).splitlines():
        key, sep, value = line.partition("\t")
        if sep:
            out[key.strip()] = value.strip()
    return out


def conf_membership(host: str, port: int, timeout_s: float = 2.0, tls: ssl.SSLContext | None = None) -> str:
    """The ``membership:`` part of ``conf``: the dynamic config (server lines, ``version=``) as this server runs it.

    Empty when the server reports none (standalone, or a version without dynamic reconfiguration).
    """
    text = send_word(host, port, "conf", timeout_s, tls)
    _, sep, rest = text.partition("membership:")
    return rest.strip() + "\n" if sep else ""
