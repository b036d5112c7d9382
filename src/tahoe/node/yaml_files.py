"""``private/introducers.yaml`` and ``private/servers.yaml`` (pure).

Shapes from ``reference/storage-protocol.md`` §7.7 and ``reference/frontends.md``
§1.6; see ``docs/formats/node-config.md``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from .errors import MalformedConfigFile

#: Values allowed for a ``[connections]tcp`` key or a static server's ``connections: tcp``.
CONNECTION_HANDLERS = ("tcp", "tor", "disabled")


@frozen
class StaticServer:
    """One entry of ``private/servers.yaml`` (frontends.md §1.6).

    :ivar server_id: the key, ideally ``v0-<52 base32>``.
    :ivar announcement: the ``ann`` mapping, as YAML gave it.
    :ivar connections: the ``connections`` overrides, e.g. ``{"tcp": "tor"}``.
    """

    server_id: str
    announcement: Mapping[str, Any] = field(eq=False)
    connections: tuple[tuple[str, str], ...] = ()


def _load_yaml(text: str, filename: str) -> Any:
    # PyYAML is imported here, not at module level, so that CLI commands that
    # import the node configuration for tahoe.cfg alone do not pay for it.
    import yaml
    try:
        return yaml.safe_load(text.removeprefix("\ufeff"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise MalformedConfigFile(filename, f"is not valid YAML{where}: {problem}") from None


def parse_introducers_yaml(text: str, filename: str = "private/introducers.yaml",
                           ) -> dict[str, str]:
    """Parse ``introducers.yaml``: ``introducers: {PETNAME: {furl: FURL}}``.

    See storage-protocol.md §7.7.

    :returns: petname → FURL, in file order. A file without an ``introducers``
        key gives an empty mapping.
    :raises MalformedConfigFile: for YAML errors, an empty file, or a shape other
        than the one above (petnames and FURLs must be strings).
    """
    data = _load_yaml(text, filename)
    if data is None:
        raise MalformedConfigFile(filename, "is empty (write 'introducers: {}' for none)")
    if not isinstance(data, dict):
        raise MalformedConfigFile(filename, "must be a mapping with the key 'introducers'")
    section = data.get("introducers")
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise MalformedConfigFile(filename, "'introducers' must map petnames to {furl: ...}")
    result: dict[str, str] = {}
    for petname, entry in section.items():
        if not isinstance(petname, str):
            raise MalformedConfigFile(filename, f"introducer petname {petname!r} is not a string")
        if not isinstance(entry, dict) or "furl" not in entry:
            raise MalformedConfigFile(filename, f"introducer {petname!r} has no 'furl'")
        furl = entry["furl"]
        if not isinstance(furl, str) or not furl.strip():
            raise MalformedConfigFile(filename, f"introducer {petname!r}: 'furl' must be"
                                      " a non-empty string")
        result[petname] = furl.strip()
    return result


def parse_servers_yaml(text: str, filename: str = "private/servers.yaml",
                       ) -> dict[str, StaticServer]:
    """Parse ``servers.yaml``: ``storage: {SERVER_ID: {ann: {...}, connections: {...}}}``.

    An empty file, or one without ``storage``, means no static servers.

    :returns: server id → :class:`StaticServer`, in file order.
    :raises MalformedConfigFile: for YAML errors or another shape.
    """
    data = _load_yaml(text, filename)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MalformedConfigFile(filename, "must be a mapping with the key 'storage'")
    section = data.get("storage")
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise MalformedConfigFile(filename, "'storage' must map server ids to {ann: ...}")
    servers: dict[str, StaticServer] = {}
    for server_id, entry in section.items():
        if not isinstance(server_id, str):
            raise MalformedConfigFile(filename, f"server id {server_id!r} is not a string")
        if not isinstance(entry, dict) or not isinstance(entry.get("ann"), dict):
            raise MalformedConfigFile(filename, f"server {server_id!r} needs an 'ann' mapping")
        ann = entry["ann"]
        for key in ("anonymous-storage-FURL", "nickname", "permutation-seed-base32"):
            if key in ann and not isinstance(ann[key], str):
                raise MalformedConfigFile(filename, f"server {server_id!r}: ann {key!r}"
                                          " must be a string")
        connections = entry.get("connections") or {}
        if not isinstance(connections, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in connections.items()):
            raise MalformedConfigFile(filename, f"server {server_id!r}: 'connections' must map"
                                      " hint types to handler names")
        if connections.get("tcp", "tcp") not in CONNECTION_HANDLERS:
            raise MalformedConfigFile(filename, f"server {server_id!r}: connections tcp must be"
                                      f" one of {', '.join(CONNECTION_HANDLERS)}")
        servers[server_id] = StaticServer(server_id, dict(ann), tuple(sorted(connections.items())))
    return servers
