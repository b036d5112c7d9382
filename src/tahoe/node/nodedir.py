"""Node directories on disk: create them as ``tahoe create-*`` does, read them at start.

A shell over :mod:`tahoe.node.config`: this module reads and writes files and
may bind a socket (to find a free port); the parsing and validation are pure
and live in ``config``. Layout and contents follow ``reference/frontends.md``
§1.1-1.2 (see ``docs/formats/node-config.md``).
"""
from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterable, Mapping

from attrs import field, frozen

from ..util import base32
from ..util.errors import BadBase32
from .config import (CLIENT, INTRODUCER, NodeConfig, StaticServer, check_old_config_files,
                     decode_config_bytes, introducer_furls, parse_config,
                     parse_introducers_yaml, parse_servers_yaml)
from .errors import (DirectoryNotEmpty, MalformedConfigFile, NotANodeDirectory,
                     TubNotListening, UnreadableConfig)

__all__ = [
    "NodeOptions", "NodeDirectory", "DEFAULT_WEB_PORT", "render_tahoe_cfg",
    "render_introducers_yaml", "create_node_directory", "read_node_directory",
    "find_node_type", "allocate_tcp_port", "make_secret", "quote_path",
]

#: ``--webport`` default of create-node and create-client.
DEFAULT_WEB_PORT = "tcp:3456:interface=127.0.0.1"
#: Number of random bytes in ``private/secret`` and ``private/convergence``.
SECRET_BYTES = 32
TAC_NAMES = {CLIENT: "tahoe-client.tac", INTRODUCER: "tahoe-introducer.tac"}

RandomBytes = Callable[[int], bytes]

_TAC_STUB = '''\
# This file only marks this directory as a Tahoe-LAFS node directory: its
# name tells "tahoe run" which kind of node lives here. It is not a program.
import sys
print("This is a marker file of a Tahoe-LAFS node directory, not a program.")
print("Start the node with: tahoe run DIRECTORY")
sys.exit(1)
'''

_PRIVATE_README = '''\
The files in this directory are secrets of the Tahoe-LAFS node that lives in the
directory above (keys, capabilities, FURLs). Only the owner may read them; keep
it that way, and do not copy them anywhere you would not put the node itself.
'''

_HEADER = '''\
# -*- mode: conf; coding: utf-8 -*-

# Settings of the Tahoe-LAFS node that lives in this directory. The node
# reads this file only when it starts. Tahoe-LAFS's docs/configuration.rst
# describes every section and key.


'''


@frozen
class NodeOptions:
    """What ``tahoe create-*`` puts into a new node directory.

    :ivar node_type: ``"client"`` (create-node, create-client) or ``"introducer"``.
    :ivar web_port: the ``[node]web.port`` value; ``""`` means no web server.
    :ivar tub_port: the ``[node]tub.port`` value, e.g. ``"tcp:3457"`` or ``"disabled"``.
    :ivar tub_location: the ``[node]tub.location`` value, e.g. ``"tcp:HOST:3457"``.
    :ivar introducer_furl: written to ``private/introducers.yaml`` as petname ``default``.
    :ivar storage_dir: ``[storage]storage_dir``, or ``None`` to leave it commented out.
    """

    node_type: str = CLIENT
    nickname: str = ""
    web_port: str = DEFAULT_WEB_PORT
    tub_port: str = "disabled"
    tub_location: str = "disabled"
    introducer_furl: str | None = None
    shares_needed: int = 3
    shares_happy: int = 7
    shares_total: int = 10
    storage_enabled: bool = True
    storage_dir: str | None = None
    helper_enabled: bool = False


def render_tahoe_cfg(options: NodeOptions) -> str:
    """The ``tahoe.cfg`` text Tahoe's create commands write (frontends.md §1.2).

    Same sections, keys, order and values; the comments are our own. An
    introducer gets only ``[node]``.
    """
    lines = [
        "[node]",
        f"nickname = {options.nickname}",
        "reveal-IP-address = true",
        f"web.port = {options.web_port}",
        "web.static = public_html",
        f"tub.port = {options.tub_port}",
        f"tub.location = {options.tub_location}",
        "",
        "#log_gatherer.furl =",
        "#timeout.keepalive =",
        "#timeout.disconnect =",
        "#ssh.port = 8022",
        "#ssh.authorized_keys_file = ~/.ssh/authorized_keys",
        "",
    ]
    if options.node_type == CLIENT:
        lines += [
            "[client]",
            "helper.furl =",
            "",
            "# Erasure coding of new uploads: each file becomes shares.total shares,",
            "# any shares.needed of which rebuild it, spread over at least shares.happy",
            "# servers. Changing them later is fine: caps record their own values.",
            f"shares.needed = {options.shares_needed}",
            f"shares.happy = {options.shares_happy}",
            f"shares.total = {options.shares_total}",
            "",
            "[storage]",
            "# Offer disk space to the other nodes of the grid?",
            f"enabled = {'true' if options.storage_enabled else 'false'}",
            "#readonly =",
            "reserved_space = 1G",
            f"storage_dir = {options.storage_dir}" if options.storage_dir else "#storage_dir =",
            "#expire.enabled =",
            "#expire.mode =",
            "",
            "[helper]",
            "# Run an upload helper for other clients?",
            f"enabled = {'true' if options.helper_enabled else 'false'}",
            "",
        ]
    return _HEADER + "\n".join(lines) + "\n"


def render_introducers_yaml(furls: Mapping[str, str]) -> str:
    """``private/introducers.yaml`` for petname → FURL (storage-protocol.md §7.7).

    Written without PyYAML: each scalar is a JSON string, which YAML reads back unchanged.
    """
    lines = ["introducers:"]
    for petname, furl in furls.items():
        lines += [f"  {json.dumps(petname)}:", f"    furl: {json.dumps(furl)}"]
    if not furls:
        lines = ["introducers: {}"]
    return "\n".join(lines) + "\n"


def make_secret(random_bytes: RandomBytes = os.urandom) -> str:
    """A new lease or convergence secret as stored: base32 of 32 random bytes and a newline."""
    return base32.b2a(random_bytes(SECRET_BYTES)) + "\n"


def allocate_tcp_port() -> int:
    """A TCP port that is free on all interfaces right now (the kernel picks it).

    Another process may take it before the node starts; Tahoe's create-node has
    the same race.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        port: int = sock.getsockname()[1]
    return port


def quote_path(path: str) -> str:
    """A path quoted for messages, as Tahoe prints it: ``'path'``, or JSON-style if needed."""
    if "'" not in path and path.isprintable():
        return f"'{path}'"
    return json.dumps(path)


def _write_text(path: str, text: str, mode: int = 0o644) -> None:
    """Write ``text``; a new file gets ``mode`` (0o600 for secrets), an existing one keeps its."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with open(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


#: Files under ``private/`` hold secrets (convergence, lease secret, FURLs, caps): owner only.
PRIVATE_MODE = 0o600


def _make_private_dir(basedir: str) -> str:
    private = os.path.join(basedir, "private")
    os.makedirs(private, mode=0o700, exist_ok=True)
    os.chmod(private, 0o700)
    return private


def create_node_directory(basedir: str, options: NodeOptions,
                          random_bytes: RandomBytes = os.urandom) -> list[str]:
    """Create a node directory as ``tahoe create-node/-client/-introducer`` does.

    Writes the ``.tac`` marker, ``private/`` (mode 0700), ``tahoe.cfg``,
    ``private/introducers.yaml`` when an introducer is given and, for a client,
    ``private/secret`` and ``private/convergence``. The ``tahoe.cfg`` text is
    validated with :func:`~tahoe.node.config.parse_config` before anything is
    written, so a bad option leaves no directory behind. One problem does not
    stop the creation, as in Tahoe: a tub that does not listen (``--listen=none``)
    while storage, the helper or an introducer needs one; it is returned.

    :param basedir: the directory; it may exist if it is empty. Missing parents
        are created.
    :returns: the messages of the problems that will stop the node from starting
        until ``tahoe.cfg`` is edited (empty normally).
    :raises DirectoryNotEmpty: if ``basedir`` exists and is not empty.
    :raises ConfigError: if the options make an invalid ``tahoe.cfg``.
    :raises OSError: if the files cannot be written.
    """
    basedir = os.path.abspath(basedir)
    if os.path.exists(basedir) and (not os.path.isdir(basedir) or os.listdir(basedir)):
        raise DirectoryNotEmpty(basedir)
    cfg_path = os.path.join(basedir, "tahoe.cfg")
    cfg_text = render_tahoe_cfg(options)
    problems = []
    try:
        parse_config(cfg_text, cfg_path, options.node_type)
    except TubNotListening as e:
        problems.append(str(e))

    os.makedirs(basedir, exist_ok=True)
    _write_text(os.path.join(basedir, TAC_NAMES[options.node_type]), _TAC_STUB)
    private = _make_private_dir(basedir)
    _write_text(cfg_path, cfg_text)
    if options.introducer_furl is not None and options.node_type == CLIENT:
        _write_text(os.path.join(private, "introducers.yaml"),
                    render_introducers_yaml({"default": options.introducer_furl}), PRIVATE_MODE)
    if options.node_type == CLIENT:
        for name in ("secret", "convergence"):
            _write_text(os.path.join(private, name), make_secret(random_bytes), PRIVATE_MODE)
    return problems


# ---------------------------------------------------------------------------
# Reading a node directory at start
# ---------------------------------------------------------------------------

@frozen
class NodeDirectory:
    """What a node learns from its directory before it starts its services.

    :ivar basedir: the absolute path of the node directory.
    :ivar node_type: ``"client"`` or ``"introducer"`` (from the ``.tac`` file name).
    :ivar config: the validated ``tahoe.cfg``.
    :ivar introducers: ``(petname, FURL)`` pairs from ``private/introducers.yaml`` and
        the deprecated ``[client]introducer.furl`` (empty for an introducer).
    :ivar static_servers: the entries of ``private/servers.yaml``.
    :ivar lease_secret: the bytes of ``private/secret`` (``None`` for an introducer).
    :ivar convergence_secret: the bytes of ``private/convergence``; ``b""`` if the
        file is empty (``None`` for an introducer).
    """

    basedir: str
    node_type: str
    config: NodeConfig
    introducers: tuple[tuple[str, str], ...] = ()
    static_servers: tuple[StaticServer, ...] = ()
    lease_secret: bytes | None = field(default=None, repr=False)
    convergence_secret: bytes | None = field(default=None, repr=False)

    def path(self, *parts: str) -> str:
        """An absolute path inside the node directory."""
        return os.path.join(self.basedir, *parts)

    def private_path(self, *parts: str) -> str:
        """An absolute path inside ``private/``."""
        return os.path.join(self.basedir, "private", *parts)

    def config_path(self, value: str) -> str:
        """Resolve a path from ``tahoe.cfg``: ``~`` is expanded, a relative path is
        relative to the node directory (``web.static``, ``tempdir``, ``storage_dir``…)."""
        return os.path.abspath(os.path.join(self.basedir, os.path.expanduser(value)))


def find_node_type(basedir: str) -> str | None:
    """The node type named by the first ``*.tac`` file (sorted), or ``None``.

    A name containing ``client`` means a client, ``introducer`` an introducer.
    """
    try:
        names = sorted(n for n in os.listdir(basedir) if n.endswith(".tac"))
    except OSError:
        return None
    for name in names:
        if "client" in name:
            return CLIENT
        if "introducer" in name:
            return INTRODUCER
    return None


def _read_text(path: str, missing: str | None = None) -> str | None:
    """A file's text (UTF-8, BOM dropped); ``missing`` if it does not exist."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return missing
    except OSError as e:
        raise UnreadableConfig(path, f"cannot be read: {e.strerror or e}") from None
    return decode_config_bytes(data, path)


def _read_or_create_secret(path: str, random_bytes: RandomBytes) -> bytes:
    text = _read_text(path)
    if text is None:
        text = make_secret(random_bytes)
        _write_text(path, text, PRIVATE_MODE)
    try:
        return base32.a2b(text.strip())
    except BadBase32:
        raise MalformedConfigFile(path, "is not lower-case base32 text") from None


def read_node_directory(basedir: str, random_bytes: RandomBytes = os.urandom,
                        ) -> NodeDirectory:
    """Read and validate a node directory, as a node does before it starts.

    Refuses pre-1.3 config files, reads ``tahoe.cfg`` (a missing file counts as
    empty, as in Tahoe), creates ``private/`` (mode 0700, with a README) if
    missing and, for a client, reads ``introducers.yaml`` and ``servers.yaml``
    and reads ``private/secret`` and ``private/convergence``, creating them when
    missing.

    :raises NotANodeDirectory: if ``basedir`` is not a directory or has no ``.tac`` marker.
    :raises ConfigError: (a subclass, naming the file) for any bad file:
        :class:`~tahoe.node.errors.OldConfigError`, :class:`UnreadableConfig`,
        :class:`MalformedConfigFile`, and the ``tahoe.cfg`` errors of
        :func:`~tahoe.node.config.parse_config`.
    :raises OSError: if ``private/`` or a missing secret cannot be written.
    """
    basedir = os.path.abspath(os.path.expanduser(basedir))
    if not os.path.isdir(basedir):
        raise NotANodeDirectory(f"{quote_path(basedir)} does not exist or is not a directory")
    node_type = find_node_type(basedir)
    if node_type is None:
        raise NotANodeDirectory(
            f"{quote_path(basedir)} is not a node directory (it has neither"
            f" {TAC_NAMES[CLIENT]} nor {TAC_NAMES[INTRODUCER]})")
    check_old_config_files(_list_names(basedir), basedir, node_type)
    cfg_path = os.path.join(basedir, "tahoe.cfg")
    config = parse_config(_read_text(cfg_path, missing="") or "", cfg_path, node_type)

    private = os.path.join(basedir, "private")
    if not os.path.isdir(private):
        _make_private_dir(basedir)
        _write_text(os.path.join(private, "README"), _PRIVATE_README)
    if node_type != CLIENT:
        return NodeDirectory(basedir, node_type, config)

    yaml_path = os.path.join(private, "introducers.yaml")
    yaml_text = _read_text(yaml_path)
    from_yaml = {} if yaml_text is None else parse_introducers_yaml(yaml_text, yaml_path)
    introducers = introducer_furls(config, from_yaml, yaml_path)
    servers_path = os.path.join(private, "servers.yaml")
    servers_text = _read_text(servers_path)
    servers = {} if servers_text is None else parse_servers_yaml(servers_text, servers_path)
    return NodeDirectory(
        basedir, node_type, config,
        introducers=tuple(introducers.items()),
        static_servers=tuple(servers.values()),
        lease_secret=_read_or_create_secret(os.path.join(private, "secret"), random_bytes),
        convergence_secret=_read_or_create_secret(
            os.path.join(private, "convergence"), random_bytes),
    )


def _list_names(basedir: str) -> Iterable[str]:
    try:
        return os.listdir(basedir)
    except OSError as e:
        raise UnreadableConfig(basedir, f"cannot be listed: {e.strerror or e}") from None
