"""The configuration of a node directory: parse and validate (pure).

The caller reads the files and passes their text and name; nothing here touches
the disk, the clock or the network. The rules follow ``reference/frontends.md``
§1.1 and §1.4-1.6 and ``reference/storage-protocol.md`` §5.5, §6.1 and
§7.6-7.7; ``docs/formats/node-config.md`` describes them in our words.

This module is the package's facade: :func:`parse_config` (text of
``tahoe.cfg`` → :class:`NodeConfig`), :func:`check_old_config_files`,
:func:`introducer_furls`, and, re-exported, the settings values of
:mod:`.settings`, the YAML parsers of :mod:`.yaml_files` and the value
parsers of :mod:`.values`.
"""
from __future__ import annotations

import configparser
from collections.abc import Iterable, Mapping
from typing import Callable, TypeVar

from ..immutable.params import DEFAULT_MAX_SEGMENT_SIZE
from .settings import (CLIENT, DEFAULT_NICKNAME, DEFAULT_S3_MULTIPART_MAX_AGE, DEFAULT_S3_PORT,
                       DEFAULT_SFTP_PORT, INTRODUCER, NODE_TYPES, ClientConfig, ExpireConfig,
                       I2PConfig, NodeConfig, S3Config, SftpConfig, StorageConfig, TorConfig)
from .errors import (BadValue, ConfigError, InconsistentConfig, IntroducerConflict,
                     MalformedConfigFile, MissingValue, OldConfigError, PrivacyError,
                     TubNotListening, UnknownOption, UnknownSection)
from .values import (TUB_LISTENERS, endpoint_port, parse_age, parse_bool, parse_date,
                     parse_duration, parse_hint, parse_int, parse_s3_region,
                     parse_server_endpoint, parse_size, split_comma_list)
from .yaml_files import (CONNECTION_HANDLERS, StaticServer, parse_introducers_yaml,
                         parse_servers_yaml)

__all__ = [
    "CLIENT", "INTRODUCER", "NODE_TYPES", "NodeConfig", "ClientConfig", "StorageConfig",
    "ExpireConfig", "SftpConfig", "S3Config", "TorConfig", "I2PConfig", "StaticServer",
    "parse_config", "read_ini", "check_known_names", "allowed_sections",
    "decode_config_bytes", "check_old_config_files", "introducer_furls",
    "parse_introducers_yaml", "parse_servers_yaml", "parse_bool", "parse_int",
    "parse_size", "parse_duration", "parse_age", "parse_date", "parse_server_endpoint",
    "parse_hint",
    "endpoint_port",
    "OLD_CONFIG_FILES",
]


#: Keys allowed in every node's ``tahoe.cfg`` (frontends.md §1.5), lower case.
COMMON_SECTIONS: Mapping[str, frozenset[str]] = {
    "node": frozenset({
        "nickname", "web.port", "web.static", "tub.port", "tub.location",
        "log_gatherer.furl", "timeout.keepalive", "timeout.disconnect", "tempdir",
        "reveal-ip-address"}),
    "connections": frozenset({"tcp"}),
    "tor": frozenset({
        "enabled", "launch", "socks.port", "control.port", "tor.executable", "onion",
        "onion.local_port", "onion.external_port", "onion.private_key_file"}),
    "i2p": frozenset({
        "enabled", "launch", "sam.port", "i2p.configdir", "i2p.executable", "dest",
        "dest.port", "dest.private_key_file"}),
}
#: Sections and keys a client node (create-node / create-client) adds.
CLIENT_SECTIONS: Mapping[str, frozenset[str]] = {
    "client": frozenset({
        "introducer.furl", "helper.furl", "shares.needed", "shares.happy", "shares.total",
        "mutable.format", "peers.preferred", "force_foolscap", "storage.plugins",
        "key_generator.furl", "shares._max_immutable_segment_size_for_testing"}),
    "storage": frozenset({
        "enabled", "anonymous", "readonly", "reserved_space", "storage_dir",
        "expire.enabled", "expire.mode", "expire.override_lease_duration",
        "expire.cutoff_date", "expire.immutable", "expire.mutable", "plugins",
        "grid_management", "force_foolscap", "debug_discard"}),
    "helper": frozenset({"enabled"}),
    "sftpd": frozenset({
        "enabled", "port", "host_pubkey_file", "host_privkey_file", "accounts.file"}),
    "s3": frozenset({"enabled", "port", "accounts.file", "region", "multipart.max_age"}),
}
#: Client sections whose keys are free: plugin settings and Grid Manager data.
FREE_SECTION_PREFIXES = ("storageserver.plugins.", "storageclient.plugins.")
FREE_SECTIONS = frozenset({"grid_managers", "grid_manager_certificates"})

#: Pre-1.3 single-value files that make a node refuse to start (frontends.md §1.1).
OLD_CONFIG_FILES = frozenset({
    "nickname", "webport", "introducer.furl", "helper.furl", "no_storage",
    "readonly_storage", "sizelimit", "stats_gatherer.furl", "run_helper",
    "keepalive_timeout", "disconnect_timeout", "advertised_ip_addresses",
    "key_generator.furl", "log_gatherer.furl", "debug_discard_storage"})
#: Files an introducer itself writes, so they are not "old" in its directory.
_GENERATED_FILES = {CLIENT: frozenset(), INTRODUCER: frozenset({"introducer.furl"})}

MUTABLE_FORMATS = ("sdmf", "mdmf")
EXPIRE_MODES = ("age", "cutoff-date")

T = TypeVar("T")


def _pairs(items: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(items.items()))


def decode_config_bytes(data: bytes, filename: str) -> str:
    """Decode a configuration file's bytes as UTF-8, dropping a leading BOM.

    :raises MalformedConfigFile: if the bytes are not UTF-8.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise MalformedConfigFile(filename, f"is not UTF-8 text (byte {e.start})") from None


def read_ini(text: str, filename: str) -> dict[str, dict[str, str]]:
    """Parse INI text as Tahoe does: section → lower-case key → value.

    A leading BOM is ignored; a key given twice keeps its last value; ``%`` is
    not special; ``[DEFAULT]`` is an ordinary (hence unknown) section.

    :raises MalformedConfigFile: on a syntax error, with its line number.
    """
    parser = configparser.ConfigParser(strict=False, interpolation=None,
                                       default_section="\x00no default section")
    try:
        parser.read_string(text.removeprefix("\ufeff"), source=filename)
    except configparser.MissingSectionHeaderError as e:
        raise MalformedConfigFile(
            filename, f"line {e.lineno}: a key comes before any [section] header") from None
    except configparser.ParsingError as e:
        lines = ", ".join(str(lineno) for lineno, _ in e.errors)
        raise MalformedConfigFile(filename, f"cannot parse line(s) {lines}"
                                  " (expected 'key = value', '[section]' or a comment)") from None
    except configparser.Error as e:
        raise MalformedConfigFile(filename, str(e).splitlines()[0]) from None
    return {name: dict(parser.items(name, raw=True)) for name in parser.sections()}


def allowed_sections(node_type: str) -> Mapping[str, frozenset[str]]:
    """The static sections and keys a node of ``node_type`` accepts."""
    if node_type == CLIENT:
        return {**COMMON_SECTIONS, **CLIENT_SECTIONS}
    if node_type == INTRODUCER:
        return COMMON_SECTIONS
    raise ValueError(f"unknown node type {node_type!r}")


def check_known_names(ini: Mapping[str, Mapping[str, str]], filename: str,
                      node_type: str = CLIENT) -> None:
    """Refuse unknown sections and keys, as Tahoe does at startup (frontends.md §1.4).

    :raises UnknownSection: for a section this node type does not know.
    :raises UnknownOption: for an unknown key in a known section.
    """
    static = allowed_sections(node_type)
    for section, items in ini.items():
        if section in static:
            for key in items:
                if key not in static[section]:
                    raise UnknownOption(filename, section, key)
        elif not (node_type == CLIENT and _is_free_section(section)):
            raise UnknownSection(filename, section)


def _is_free_section(section: str) -> bool:
    return section in FREE_SECTIONS or section.startswith(FREE_SECTION_PREFIXES)


class _Reader:
    """Typed access to a validated INI mapping; errors carry file, section and key."""

    def __init__(self, ini: Mapping[str, Mapping[str, str]], filename: str) -> None:
        self.ini = ini
        self.filename = filename

    def raw(self, section: str, key: str) -> str | None:
        value = self.ini.get(section, {}).get(key)
        if value is not None and key.endswith(".furl") and _has_unescaped_hash(value):
            raise BadValue(self.filename, "contains an unescaped '#' character (comments are"
                           " not allowed after a value; write '\\#' for a literal '#')",
                           section, key)
        return value

    def text(self, section: str, key: str, default: T) -> str | T:
        value = self.raw(section, key)
        return default if value is None else value

    def optional(self, section: str, key: str) -> str | None:
        """The value, or ``None`` when absent or empty."""
        value = self.raw(section, key)
        if value is None:
            return None
        return value.strip() or None

    def parsed(self, section: str, key: str, parser: Callable[[str], T], default: T) -> T:
        value = self.raw(section, key)
        if value is None:
            return default
        try:
            return parser(value)
        except ValueError as e:
            raise BadValue(self.filename, str(e), section, key) from None

    def boolean(self, section: str, key: str, default: bool) -> bool:
        return self.parsed(section, key, parse_bool, default)

    def integer(self, section: str, key: str, default: T, minimum: int = 0) -> int | T:
        """An integer; ``default`` when absent (an empty value is an error)."""
        return self.parsed(section, key, lambda v: parse_int(v, minimum), default)

    def optional_int(self, section: str, key: str, minimum: int = 0) -> int | None:
        """An integer, or ``None`` when absent or empty."""
        return self.parsed(section, key,
                           lambda v: parse_int(v, minimum) if v.strip() else None, None)

    def error(self, cls: type[ConfigError], problem: str, section: str | None = None,
              key: str | None = None) -> ConfigError:
        return cls(self.filename, problem, section, key)


def _has_unescaped_hash(value: str) -> bool:
    chars = iter(value)
    for ch in chars:
        if ch == "\\":
            next(chars, None)
        elif ch == "#":
            return True
    return False


# ---------------------------------------------------------------------------
# tahoe.cfg → NodeConfig
# ---------------------------------------------------------------------------

def parse_config(text: str, filename: str = "tahoe.cfg", node_type: str = CLIENT) -> NodeConfig:
    """Parse and validate the text of ``tahoe.cfg`` for a node of ``node_type``.

    :param text: the file's content (a leading BOM is allowed).
    :param filename: the file's name or path, used in every message.
    :param node_type: ``"client"`` (create-node, create-client) or ``"introducer"``.
    :raises ConfigError: a subclass naming the file, section, key and problem:
        :class:`MalformedConfigFile`, :class:`UnknownSection`, :class:`UnknownOption`,
        :class:`BadValue`, :class:`MissingValue`, :class:`InconsistentConfig`,
        :class:`PrivacyError`.
    """
    ini = read_ini(text, filename)
    check_known_names(ini, filename, node_type)
    r = _Reader(ini, filename)
    warnings: list[str] = []
    if r.optional("node", "log_gatherer.furl"):
        warnings.append(f"'{r.filename}' [node]log_gatherer.furl is ignored: this"
                        " implementation sends no Foolscap logs")

    reveal_ip = r.boolean("node", "reveal-ip-address", True)
    tub_port, tub_location = _tub_port_and_location(r, reveal_ip)
    connections_tcp = r.parsed("connections", "tcp", _connection_handler, "tcp")
    if not reveal_ip and connections_tcp == "tcp":
        raise PrivacyError(filename, "reveal-IP-address = false needs [connections]tcp ="
                           " tor or disabled (the default 'tcp' reveals the IP address)",
                           "connections", "tcp")
    web_port = r.parsed("node", "web.port",
                        lambda v: parse_server_endpoint(v, allow_port_zero=True)
                        if v.strip() else None, None)

    if node_type == CLIENT:
        client = _client_section(r, warnings)
        storage = _storage_section(r)
        helper_enabled = r.boolean("helper", "enabled", False)
        sftpd = _sftpd_section(r)
        s3 = _s3_section(r)
    else:
        client, storage, helper_enabled, sftpd, s3 = (
            ClientConfig(), StorageConfig(enabled=False), False, SftpConfig(), S3Config())
    if tub_port == ():
        for enabled, what, section in ((storage.enabled, "storage", "storage"),
                                       (helper_enabled, "the helper", "helper")):
            if enabled:
                raise r.error(TubNotListening, f"{what} is enabled, but the tub is not"
                              " listening ([node]tub.port = disabled)", section, "enabled")
        if node_type == INTRODUCER:
            raise r.error(TubNotListening, "an introducer needs a listening tub,"
                          " but tub.port = disabled", "node", "tub.port")

    free = {s: items for s, items in ini.items() if _is_free_section(s)}
    return NodeConfig(
        filename=filename,
        node_type=node_type,
        nickname=r.text("node", "nickname", DEFAULT_NICKNAME),
        web_port=web_port,
        web_static=r.text("node", "web.static", "public_html").strip() or "public_html",
        tub_port=tub_port,
        tub_location=tub_location,
        reveal_ip=reveal_ip,
        tempdir=r.text("node", "tempdir", "tmp").strip() or "tmp",
        log_gatherer_furl=r.optional("node", "log_gatherer.furl"),
        timeout_keepalive=r.optional_int("node", "timeout.keepalive"),
        timeout_disconnect=r.optional_int("node", "timeout.disconnect"),
        connections_tcp=connections_tcp,
        tor=_tor_section(r, tub_port),
        i2p=_i2p_section(r, tub_port),
        client=client,
        storage=storage,
        helper_enabled=helper_enabled,
        sftpd=sftpd,
        s3=s3,
        storage_server_plugins=_plugin_sections(free, "storageserver.plugins."),
        storage_client_plugins=_plugin_sections(free, "storageclient.plugins."),
        grid_managers=_pairs(free.get("grid_managers", {})),
        grid_manager_certificates=_pairs(free.get("grid_manager_certificates", {})),
        warnings=tuple(warnings),
    )


def _connection_handler(text: str) -> str:
    value = text.strip().lower()
    if value not in CONNECTION_HANDLERS:
        raise ValueError(f"expected one of {', '.join(CONNECTION_HANDLERS)}, got {text!r}")
    return value


def _plugin_sections(free: Mapping[str, Mapping[str, str]], prefix: str,
                     ) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    return tuple(sorted((s[len(prefix):], _pairs(items))
                        for s, items in free.items() if s.startswith(prefix)))


def _tub_port_and_location(r: _Reader, reveal_ip: bool,
                           ) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """``tub.port`` and ``tub.location`` (storage-protocol.md §7.6)."""
    port_text = r.raw("node", "tub.port")
    location_text = r.raw("node", "tub.location")
    if port_text is not None and not port_text.strip():
        raise r.error(BadValue, "must not be empty (give an endpoint such as tcp:3457,"
                      " or 'disabled')", "node", "tub.port")
    if location_text is not None and not location_text.strip():
        raise r.error(BadValue, "must not be empty (give hints such as tcp:HOST:3457,"
                      " AUTO, or 'disabled')", "node", "tub.location")
    port_disabled = port_text is not None and port_text.strip() == "disabled"
    location_disabled = location_text is not None and location_text.strip() == "disabled"
    if port_disabled != location_disabled:
        which = "tub.port" if port_disabled else "tub.location"
        other = "tub.location" if port_disabled else "tub.port"
        raise r.error(InconsistentConfig, f"{which} is disabled, but {other} is not"
                      " (disable both or neither)", "node", which)
    if port_disabled:
        return (), ()

    ports: tuple[str, ...] | None = None
    if port_text is not None:
        ports = _parse_tub_ports(r, port_text)
    hints: tuple[str, ...] | None = None
    if location_text is not None:
        hints = _parse_location(r, location_text)
    uses_auto = hints is None or "AUTO" in hints
    if not reveal_ip:
        if uses_auto:
            raise r.error(PrivacyError, "reveal-IP-address = false, but tub.location is"
                          " AUTO or absent (which reveals the IP address)", "node", "tub.location")
        for hint in hints or ():
            if parse_hint(hint)[0] == "tcp":
                raise r.error(PrivacyError, f"reveal-IP-address = false, but tub.location"
                              f" has the tcp hint {hint!r}", "node", "tub.location")
    if uses_auto and ports is not None and endpoint_port(ports[0]) is None:
        raise r.error(InconsistentConfig, "AUTO needs the first tub.port endpoint to be a"
                      f" tcp one, not {ports[0]!r}", "node", "tub.location")
    return ports, hints


def _tub_endpoint(text: str) -> str:
    item = text.strip()
    if item in TUB_LISTENERS:
        return item
    if item in ("0", "tcp:0"):
        raise ValueError("cannot be 0: choose a port (or leave tub.port out)")
    return parse_server_endpoint(item)


def _parse_tub_ports(r: _Reader, text: str) -> tuple[str, ...]:
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise r.error(BadValue, f"has an empty endpoint in {text!r}", "node", "tub.port")
    result = []
    for item in items:
        try:
            result.append(_tub_endpoint(item))
        except ValueError as e:
            raise r.error(BadValue, str(e), "node", "tub.port") from None
    return tuple(result)


def _parse_location(r: _Reader, text: str) -> tuple[str, ...]:
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise r.error(BadValue, f"has an empty hint in {text!r}", "node", "tub.location")
    hints = []
    for item in items:
        if item == "disabled":
            raise r.error(BadValue, "'disabled' must be the whole value", "node", "tub.location")
        try:
            hints.append(parse_hint(item)[1])
        except ValueError as e:
            raise r.error(BadValue, str(e), "node", "tub.location") from None
    return tuple(hints)


def _client_section(r: _Reader, warnings: list[str]) -> ClientConfig:
    introducer_furl = r.optional("client", "introducer.furl")
    if introducer_furl == "None":
        raise r.error(BadValue, "'None' is not a FURL: to use no introducer, leave the key"
                      " out", "client", "introducer.furl")
    if introducer_furl:
        warnings.append(f"'{r.filename}' [client]introducer.furl is deprecated;"
                        " use private/introducers.yaml instead")
    if r.optional("client", "key_generator.furl"):
        warnings.append(f"'{r.filename}' [client]key_generator.furl is ignored")
    helper_furl = r.optional("client", "helper.furl")
    needed = r.integer("client", "shares.needed", 3, 1)
    happy = r.integer("client", "shares.happy", 7, 1)
    total = r.integer("client", "shares.total", 10, 1)
    if not needed <= total <= 256:
        key = "shares.total" if "shares.total" in r.ini.get("client", {}) else "shares.needed"
        raise r.error(InconsistentConfig, f"needs shares.needed <= shares.total <= 256,"
                      f" got needed={needed} total={total}", "client", key)
    if not needed <= happy <= total:
        raise r.error(InconsistentConfig, f"needs shares.needed <= shares.happy <= shares.total,"
                      f" got needed={needed} happy={happy} total={total}", "client", "shares.happy")
    return ClientConfig(
        introducer_furl=introducer_furl,
        helper_furl=None if helper_furl == "None" else helper_furl,
        shares_needed=needed,
        shares_happy=happy,
        shares_total=total,
        max_segment_size=r.integer(
            "client", "shares._max_immutable_segment_size_for_testing",
            DEFAULT_MAX_SEGMENT_SIZE, 1),
        mutable_format=r.parsed("client", "mutable.format", _mutable_format, "sdmf"),
        preferred_peers=r.parsed("client", "peers.preferred", split_comma_list, ()),
        force_foolscap=r.boolean("client", "force_foolscap", False),
        storage_plugins=r.parsed("client", "storage.plugins", split_comma_list, ()),
    )


def _mutable_format(text: str) -> str:
    value = text.strip().lower()
    if value not in MUTABLE_FORMATS:
        raise ValueError(f"expected sdmf or mdmf, got {text!r}")
    return value


def _storage_section(r: _Reader) -> StorageConfig:
    expire_enabled = r.boolean("storage", "expire.enabled", False)
    mode = r.raw("storage", "expire.mode")
    if mode is None or not mode.strip():
        if expire_enabled:
            raise r.error(MissingValue, "is required when expire.enabled is true"
                          " (age or cutoff-date)", "storage", "expire.mode")
        if mode is not None:
            raise r.error(BadValue, "expected age or cutoff-date, got ''", "storage", "expire.mode")
        mode = "age"
    mode = mode.strip()
    if mode not in EXPIRE_MODES:
        raise r.error(BadValue, f"expected age or cutoff-date, got {mode!r}",
                      "storage", "expire.mode")
    cutoff = r.parsed("storage", "expire.cutoff_date", parse_date, None)
    if mode == "cutoff-date" and cutoff is None:
        raise r.error(MissingValue, "is required when expire.mode = cutoff-date (YYYY-MM-DD)",
                      "storage", "expire.cutoff_date")
    storage_dir = r.text("storage", "storage_dir", "storage").strip()
    return StorageConfig(
        enabled=r.boolean("storage", "enabled", True),
        anonymous=r.boolean("storage", "anonymous", True),
        readonly=r.boolean("storage", "readonly", False),
        reserved_space=r.parsed("storage", "reserved_space", parse_size, 0),
        storage_dir=storage_dir or "storage",
        expire=ExpireConfig(
            enabled=expire_enabled,
            mode=mode,
            override_lease_duration=r.parsed(
                "storage", "expire.override_lease_duration", parse_duration, None),
            cutoff_date=cutoff,
            immutable=r.boolean("storage", "expire.immutable", True),
            mutable=r.boolean("storage", "expire.mutable", True),
        ),
        plugins=r.parsed("storage", "plugins", split_comma_list, ()),
        grid_management=r.boolean("storage", "grid_management", False),
        force_foolscap=r.boolean("storage", "force_foolscap", False),
        debug_discard=r.boolean("storage", "debug_discard", False),
    )


def _sftpd_section(r: _Reader) -> SftpConfig:
    enabled = r.boolean("sftpd", "enabled", False)
    port = r.parsed("sftpd", "port", parse_server_endpoint, DEFAULT_SFTP_PORT)
    files = {key: r.optional("sftpd", key)
             for key in ("host_pubkey_file", "host_privkey_file", "accounts.file")}
    if enabled:
        for key, value in files.items():
            if value is None:
                raise r.error(MissingValue, "is required when [sftpd]enabled is true",
                              "sftpd", key)
    return SftpConfig(enabled=enabled, port=port, host_pubkey_file=files["host_pubkey_file"],
                      host_privkey_file=files["host_privkey_file"],
                      accounts_file=files["accounts.file"])


def _s3_section(r: _Reader) -> S3Config:
    accounts_file = (r.optional("s3", "accounts.file") or "").strip()
    return S3Config(
        enabled=r.boolean("s3", "enabled", False),
        port=r.parsed("s3", "port", parse_server_endpoint, DEFAULT_S3_PORT),
        accounts_file=accounts_file or "private/s3-accounts",
        region=r.parsed("s3", "region", parse_s3_region, "us-east-1"),
        multipart_max_age=r.parsed("s3", "multipart.max_age", parse_age,
                                   DEFAULT_S3_MULTIPART_MAX_AGE))


def _tor_section(r: _Reader, tub_port: tuple[str, ...] | None) -> TorConfig:
    tor = TorConfig(
        enabled=r.boolean("tor", "enabled", True),
        launch=r.boolean("tor", "launch", False),
        socks_port=r.optional("tor", "socks.port"),
        control_port=r.optional("tor", "control.port"),
        executable=r.optional("tor", "tor.executable"),
        onion=r.boolean("tor", "onion", False),
        onion_local_port=r.optional_int("tor", "onion.local_port", 1),
        onion_external_port=r.optional_int("tor", "onion.external_port", 1),
        onion_private_key_file=r.optional("tor", "onion.private_key_file"),
    )
    if tor.launch and tor.control_port:
        raise r.error(InconsistentConfig, "launch = true and control.port exclude each other",
                      "tor", "control.port")
    if tor.onion:
        for key, value in (("onion.local_port", tor.onion_local_port),
                           ("onion.external_port", tor.onion_external_port),
                           ("onion.private_key_file", tor.onion_private_key_file)):
            if value is None:
                raise r.error(MissingValue, "is required when [tor]onion is true", "tor", key)
    if tub_port and "listen:tor" in tub_port and not tor.onion:
        raise r.error(InconsistentConfig, "tub.port has listen:tor, which needs [tor]onion = true",
                      "node", "tub.port")
    return tor


def _i2p_section(r: _Reader, tub_port: tuple[str, ...] | None) -> I2PConfig:
    i2p = I2PConfig(
        enabled=r.boolean("i2p", "enabled", True),
        launch=r.boolean("i2p", "launch", False),
        sam_port=r.optional("i2p", "sam.port"),
        configdir=r.optional("i2p", "i2p.configdir"),
        executable=r.optional("i2p", "i2p.executable"),
        dest=r.boolean("i2p", "dest", False),
        dest_port=r.optional("i2p", "dest.port"),
        dest_private_key_file=r.optional("i2p", "dest.private_key_file"),
    )
    if i2p.dest:
        for key, value in (("dest.port", i2p.dest_port),
                           ("dest.private_key_file", i2p.dest_private_key_file)):
            if value is None:
                raise r.error(MissingValue, "is required when [i2p]dest is true", "i2p", key)
    if tub_port and "listen:i2p" in tub_port and not i2p.dest:
        raise r.error(InconsistentConfig, "tub.port has listen:i2p, which needs [i2p]dest = true",
                      "node", "tub.port")
    return i2p


# ---------------------------------------------------------------------------
# Old-style files, introducers
# ---------------------------------------------------------------------------

def check_old_config_files(names: Iterable[str], basedir: str, node_type: str = CLIENT) -> None:
    """Refuse a node directory that holds pre-1.3 single-value config files.

    :param names: the file names present in the node directory (not paths).
    :param basedir: the node directory, for the message.
    :raises OldConfigError: listing the offending names.
    """
    old = (set(names) & OLD_CONFIG_FILES) - _GENERATED_FILES.get(node_type, frozenset())
    if old:
        raise OldConfigError(basedir, old)


def introducer_furls(config: NodeConfig, from_yaml: Mapping[str, str],
                     yaml_filename: str = "private/introducers.yaml") -> dict[str, str]:
    """All the introducers a client uses: introducers.yaml plus the deprecated
    ``[client]introducer.furl`` as petname ``default``.

    :raises IntroducerConflict: if ``default`` is defined in both places.
    """
    result = dict(from_yaml)
    furl = config.client.introducer_furl
    if furl:
        if "default" in result:
            raise IntroducerConflict(
                config.filename, f"the introducer petname 'default' is defined both here and"
                f" in '{yaml_filename}'; remove one of them", "client", "introducer.furl")
        result["default"] = furl
    return result
