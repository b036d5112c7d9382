"""A Grid Manager's ``config.json``, read and written as Tahoe-LAFS 1.20 does.

Format (``docs/formats/grid-manager.md``): a JSON object with
``grid_manager_config_version`` 0, ``private_key`` (``priv-v0-…``) and, once a
server was added, ``storage_servers``: name → ``{"public_key": "pub-v0-…"}``,
in the order the servers were added. Written with a 4-space indent and a final
newline (printed to stdout, with ``--config -``, followed by one more blank line).
"""
from __future__ import annotations

import json
from collections.abc import Iterator

from attrs import evolve, frozen

from ..crypto.ed25519 import BadKeyString, SigningKey, VerifyingKey, parse_private_key, \
    parse_public_key
from .errors import BadGridManagerConfig

__all__ = ["CONFIG_VERSION", "GridManagerConfig", "parse_config", "format_config",
           "check_server_name"]

CONFIG_VERSION = 0


def check_server_name(name: str) -> str:
    """``name`` if it can name a storage server (it becomes part of file names
    ``NAME.cert.N``).

    :raises BadGridManagerConfig: for an empty name, ``.``/``..``, or one with
        ``/``, a NUL or another control character.
    """
    if not name or name in (".", "..") or "/" in name or any(ord(c) < 32 for c in name):
        raise BadGridManagerConfig(f"invalid storage-server name {name!r}: it becomes part of"
                                   " a file name, so it may not be empty, '.', '..', or hold"
                                   " '/' or control characters")
    return name


@frozen
class GridManagerConfig:
    """A Grid Manager: its signing key and the storage servers it knows, in order.

    :ivar private_key: the manager's Ed25519 key.
    :ivar storage_servers: ``(name, server public key)`` pairs.
    """

    private_key: SigningKey
    storage_servers: tuple[tuple[str, VerifyingKey], ...] = ()

    def public_identity(self) -> str:
        """The manager's ``pub-v0-…`` key, which clients list under ``[grid_managers]``."""
        return self.private_key.public_key.to_string()

    def names(self) -> Iterator[str]:
        """The servers' names, in the order they were added."""
        return (name for name, _ in self.storage_servers)

    def server_key(self, name: str) -> VerifyingKey:
        """The public key of the server called ``name``.

        :raises KeyError: if there is none.
        """
        for known, key in self.storage_servers:
            if known == name:
                return key
        raise KeyError(name)

    def with_server(self, name: str, key: VerifyingKey) -> GridManagerConfig:
        """This config with one more server.

        :raises KeyError: if ``name`` is taken.
        :raises BadGridManagerConfig: if ``name`` cannot name a server.
        """
        check_server_name(name)
        if name in self.names():
            raise KeyError(name)
        return evolve(self, storage_servers=(*self.storage_servers, (name, key)))

    def without_server(self, name: str) -> GridManagerConfig:
        """This config without the server called ``name``.

        :raises KeyError: if there is none.
        """
        self.server_key(name)
        return evolve(self, storage_servers=tuple(p for p in self.storage_servers
                                                  if p[0] != name))


def parse_config(text: str | bytes) -> GridManagerConfig:
    """Parse ``config.json``.

    :raises BadGridManagerConfig: on bad JSON, a missing or unknown version,
        a missing or bad private key, or a server without a good public key.
    """
    try:
        data = json.loads(text)
    except ValueError as error:
        raise BadGridManagerConfig(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise BadGridManagerConfig("not a JSON object")
    version = data.get("grid_manager_config_version")
    if version != CONFIG_VERSION or isinstance(version, bool):
        raise BadGridManagerConfig(f"Missing or unknown version '{version}' of Grid Manager"
                                   " config")
    if "private_key" not in data:
        raise BadGridManagerConfig("'private_key' required in config")
    try:
        key = parse_private_key(data["private_key"])
    except BadKeyString as error:
        raise BadGridManagerConfig(f"Invalid Grid Manager private_key: {error}") from None
    servers = data.get("storage_servers", {})
    if not isinstance(servers, dict):
        raise BadGridManagerConfig("'storage_servers' must be a JSON object")
    pairs = []
    for name, server in servers.items():
        if not isinstance(server, dict) or "public_key" not in server:
            raise BadGridManagerConfig(f"No 'public_key' for storage server '{name}'")
        try:
            pairs.append((check_server_name(name), parse_public_key(server["public_key"])))
        except BadKeyString as error:
            raise BadGridManagerConfig(f"storage server '{name}': {error}") from None
    return GridManagerConfig(key, tuple(pairs))


def format_config(config: GridManagerConfig) -> str:
    """The text of ``config.json`` (ending in a newline), byte for byte as 1.20 writes it."""
    data: dict[str, object] = {"grid_manager_config_version": CONFIG_VERSION,
                               "private_key": config.private_key.to_string()}
    if config.storage_servers:
        data["storage_servers"] = {name: {"public_key": key.to_string()}
                                   for name, key in config.storage_servers}
    return json.dumps(data, indent=4) + "\n"
