"""tahoe.cfg, introducers.yaml and servers.yaml: parsing and validation (pure).

Facts from reference/frontends.md §1.1-1.6 and reference/storage-protocol.md
§5.5, §6.1, §7.6-7.7.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tahoe.node import config as cfg
from tahoe.node.config import (CLIENT, INTRODUCER, NodeConfig, check_old_config_files,
                               decode_config_bytes, introducer_furls, parse_bool,
                               parse_config, parse_date, parse_duration, parse_hint,
                               parse_introducers_yaml, parse_server_endpoint,
                               parse_servers_yaml, parse_size)
from tahoe.node.errors import (BadValue, ConfigError, InconsistentConfig,
                               IntroducerConflict, MalformedConfigFile, MissingValue,
                               OldConfigError, PrivacyError, TubNotListening, UnknownOption,
                               UnknownSection)
from tests.test_layers import FORBIDDEN, imported_top_level_names

FILE = "/nodes/n1/tahoe.cfg"
NODE_PKG = Path(__file__).parent.parent.parent / "src" / "tahoe" / "node"

# The sample of frontends.md §1.2 (create-node --nickname=node1 --hostname=127.0.0.1).
SAMPLE = """\
[node]
nickname = node1
reveal-IP-address = true
web.port = tcp:3456:interface=127.0.0.1
web.static = public_html
tub.port = tcp:36761
tub.location = tcp:127.0.0.1:36761

#log_gatherer.furl =
#timeout.keepalive =
#timeout.disconnect =
#ssh.port = 8022
#ssh.authorized_keys_file = ~/.ssh/authorized_keys

[client]
helper.furl =
shares.needed = 3
shares.happy = 7
shares.total = 10

[storage]
enabled = true
#readonly =
reserved_space = 1G
#storage_dir =
#expire.enabled =
#expire.mode =

[helper]
enabled = false
"""


def parse(text: str, node_type: str = CLIENT) -> NodeConfig:
    """Parse ``text`` as the tahoe.cfg of a node of ``node_type`` named FILE."""
    return parse_config(text, FILE, node_type)


def listening(extra: str = "") -> str:
    """A config with a listening tub plus ``extra`` text."""
    return "[node]\ntub.port = tcp:3457\ntub.location = tcp:example.org:3457\n" + extra


@pytest.mark.parametrize("name", ["config.py", "values.py", "yaml_files.py", "errors.py"])
def test_config_modules_are_pure(name: str) -> None:
    """The parsing modules of the node layer import no I/O, clock or randomness module."""
    assert not imported_top_level_names(NODE_PKG / name) & FORBIDDEN


# ---------------------------------------------------------------------------
# Defaults and the sample
# ---------------------------------------------------------------------------

DEFAULTS = [
    ("nickname", "<unspecified>"), ("web_port", None), ("web_static", "public_html"),
    ("tub_port", None), ("tub_location", None), ("tub_listening", True), ("reveal_ip", True),
    ("tempdir", "tmp"), ("log_gatherer_furl", None), ("timeout_keepalive", None),
    ("timeout_disconnect", None), ("connections_tcp", "tcp"), ("helper_enabled", False),
    ("tor.enabled", True), ("tor.launch", False), ("tor.socks_port", None),
    ("tor.control_port", None), ("tor.executable", None), ("tor.onion", False),
    ("i2p.enabled", True), ("i2p.launch", False), ("i2p.sam_port", None), ("i2p.dest", False),
    ("client.introducer_furl", None), ("client.helper_furl", None),
    ("client.shares_needed", 3), ("client.shares_happy", 7), ("client.shares_total", 10),
    ("client.max_segment_size", 1048576), ("client.mutable_format", "sdmf"),
    ("client.preferred_peers", ()), ("client.force_foolscap", False),
    ("client.storage_plugins", ()),
    ("storage.enabled", True), ("storage.anonymous", True), ("storage.readonly", False),
    ("storage.reserved_space", 0), ("storage.storage_dir", "storage"),
    ("storage.plugins", ()), ("storage.grid_management", False),
    ("storage.force_foolscap", False), ("storage.debug_discard", False),
    ("storage.expire.enabled", False), ("storage.expire.mode", "age"),
    ("storage.expire.override_lease_duration", None), ("storage.expire.cutoff_date", None),
    ("storage.expire.immutable", True), ("storage.expire.mutable", True),
    ("sftpd.enabled", False), ("sftpd.port", "tcp:8022"), ("sftpd.accounts_file", None),
    ("storage_server_plugins", ()), ("grid_managers", ()), ("warnings", ()),
]


def attribute(config: object, dotted: str) -> object:
    """Follow a dotted attribute path."""
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


@pytest.mark.parametrize("path,expected", DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_every_default(path: str, expected: object) -> None:
    """An empty tahoe.cfg gives every documented default (frontends.md §1.5)."""
    assert attribute(parse(""), path) == expected


def test_empty_config_equals_default_value() -> None:
    """An empty file is the same value as NodeConfig() but for the file name."""
    assert parse("") == NodeConfig(filename=FILE)


def test_sample_from_create_node() -> None:
    """The tahoe.cfg that create-node writes parses to the values it says."""
    config = parse(SAMPLE)
    assert config.nickname == "node1"
    assert config.web_port == "tcp:3456:interface=127.0.0.1"
    assert config.tub_port == ("tcp:36761",)
    assert config.tub_location == ("tcp:127.0.0.1:36761",)
    assert config.client.helper_furl is None
    assert config.client.encoding_parameters().total == 10
    assert config.storage.enabled and config.storage.reserved_space == 10**9
    assert not config.helper_enabled


def test_introducer_node() -> None:
    """An introducer knows only the common sections and never runs storage."""
    config = parse("[node]\ntub.port = tcp:3458\ntub.location = tcp:h:3458\nweb.port =\n",
                   INTRODUCER)
    assert config.node_type == INTRODUCER
    assert config.web_port is None
    assert not config.storage.enabled
    for section in ("client", "storage", "helper", "storageserver.plugins.x", "grid_managers"):
        with pytest.raises(UnknownSection):
            parse(f"[{section}]\n", INTRODUCER)


def test_unknown_node_type() -> None:
    """A node type other than client or introducer is a programming error."""
    with pytest.raises(ValueError):
        parse("", "gateway")


# ---------------------------------------------------------------------------
# Unknown names, INI syntax, case, BOM
# ---------------------------------------------------------------------------

def test_unknown_option_message_is_tahoes() -> None:
    """An unknown key is fatal with Tahoe's wording (frontends.md §1.3)."""
    with pytest.raises(UnknownOption) as info:
        parse("[client]\nbogus.key = 1\n")
    assert str(info.value) == f"'{FILE}' section [client] contains unknown option 'bogus.key'"
    assert (info.value.section, info.value.key) == ("client", "bogus.key")


@pytest.mark.parametrize("text", [
    "[sftpd]\naccounts.url = http://x\n",    # documented once, never allowed
    "[node]\nssh.port = 8022\n",             # commented out in create-node's file
    "[node]\nwebport = 3456\n",
    "[storage]\nsizelimit = 1G\n",
    "[helper]\nfurl = x\n",
])
def test_unknown_options(text: str) -> None:
    """Keys outside the allowed list are refused, even plausible ones."""
    with pytest.raises(UnknownOption, match="contains unknown option"):
        parse(text)


@pytest.mark.parametrize("section", ["bogus", "Node", "DEFAULT", "ftpd", "storageserver"])
def test_unknown_sections(section: str) -> None:
    """Unknown sections are fatal; section names are case-sensitive."""
    with pytest.raises(UnknownSection) as info:
        parse(f"[{section}]\n")
    assert str(info.value) == f"'{FILE}' contains unknown section [{section}]"


def test_free_sections() -> None:
    """Plugin and Grid Manager sections take any key and are kept for the node."""
    config = parse("[storageserver.plugins.quota]\nLimit = 5\n"
                   "[storageclient.plugins.quota]\nkey = v\n"
                   "[grid_managers]\nalice = pub-v0-abc\n"
                   "[grid_manager_certificates]\ndefault = cert.json\n")
    assert config.storage_server_plugin("quota") == {"limit": "5"}
    assert config.storage_client_plugin("quota") == {"key": "v"}
    assert config.storage_server_plugin("other") == {}
    assert dict(config.grid_managers) == {"alice": "pub-v0-abc"}
    assert dict(config.grid_manager_certificates) == {"default": "cert.json"}


def test_keys_are_case_insensitive() -> None:
    """Key names match whatever their case."""
    config = parse("[node]\nNickName = Bob\nREVEAL-IP-ADDRESS = TRUE\n"
                   "[client]\nShares.Needed = 2\nSHARES.HAPPY = 2\n")
    assert config.nickname == "Bob"
    assert config.client.shares_needed == 2 and config.client.shares_happy == 2


def test_bom_and_utf8() -> None:
    """A UTF-8 BOM is allowed; values are Unicode."""
    text = "\ufeff[node]\nnickname = Zoë ☃\n"
    assert parse(text).nickname == "Zoë ☃"
    assert parse(decode_config_bytes(text.encode("utf-8"), FILE)).nickname == "Zoë ☃"
    assert decode_config_bytes("\ufeffx".encode("utf-8"), FILE) == "x"


def test_not_utf8() -> None:
    """Bytes that are not UTF-8 are refused, naming the file."""
    with pytest.raises(MalformedConfigFile, match="tahoe.cfg"):
        decode_config_bytes(b"[node]\nnickname = \xff\n", FILE)


@pytest.mark.parametrize("text,line", [
    ("nickname = x\n[node]\n", "line 1"),
    ("[node]\nnickname\n", "2"),
    ("[node\n", "1"),
])
def test_malformed_ini(text: str, line: str) -> None:
    """INI syntax errors name the file and the line."""
    with pytest.raises(MalformedConfigFile) as info:
        parse(text)
    assert FILE in str(info.value) and line in str(info.value)


def test_ini_details() -> None:
    """A repeated key keeps its last value, sections merge, '%' and '#' mid-value stay."""
    config = parse("[node]\nnickname = a\nnickname = 100% #1\n[node]\ntempdir = /t\n")
    assert config.nickname == "100% #1"
    assert config.tempdir == "/t"


# ---------------------------------------------------------------------------
# Value syntaxes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("word,value", [
    *[(w, True) for w in ("true", "yes", "on", "1", "True", "YES", "On")],
    *[(w, False) for w in ("false", "no", "off", "0", "FALSE", "No", "oFF")],
])
def test_booleans(word: str, value: bool) -> None:
    """Booleans accept true/yes/on/1 and false/no/off/0, any case."""
    assert parse_bool(word) is value
    assert parse(f"[helper]\nenabled = {word}\n" + listening()).helper_enabled is value
    assert parse(f"[storage]\nreadonly = {word}\n").storage.readonly is value


@pytest.mark.parametrize("word", ["", "y", "2", "enabled", "truee"])
def test_bad_booleans(word: str) -> None:
    """Anything else is an error naming the key."""
    with pytest.raises(BadValue) as info:
        parse(f"[storage]\nenabled = {word}\n")
    assert "[storage]enabled" in str(info.value) and FILE in str(info.value)


@pytest.mark.parametrize("text,size", [
    ("1G", 10**9), ("1Gi", 2**30), ("1GiB", 2**30), ("1gib", 2**30), ("1GB", 10**9),
    ("100MB", 10**8), ("100000kb", 10**8), ("0", 0), ("5", 5), ("5B", 5), ("5i", 5),
    ("1K", 1000), ("1Ki", 1024), ("2T", 2 * 10**12), ("1Pi", 2**50), ("1E", 10**18),
    ("3EiB", 3 * 2**60), ("", 0), (" 7M ", 7 * 10**6),
])
def test_sizes(text: str, size: int) -> None:
    """Size strings: number, scale, optional i (binary), optional B (storage-protocol.md §6.1)."""
    assert parse_size(text) == size
    assert parse(f"[storage]\nreserved_space = {text}\n").storage.reserved_space == size


@pytest.mark.parametrize("text", ["1.5G", "G", "-1", "1X", "1 G", "1BB", "1iG", "0x10"])
def test_bad_sizes(text: str) -> None:
    """An unparseable reserved_space is a startup error naming the key."""
    with pytest.raises(BadValue, match=r"\[storage\]reserved_space"):
        parse(f"[storage]\nreserved_space = {text}\n")


@settings(deadline=None)
@given(number=st.integers(0, 10**6), scale=st.sampled_from("KMGTPE"), binary=st.booleans(),
       suffix=st.sampled_from(["", "B", "b"]), upper=st.booleans())
def test_size_property(number: int, scale: str, binary: bool, suffix: str, upper: bool) -> None:
    """Every well-formed size string is number × (1000 or 1024) ** scale."""
    text = f"{number}{scale if upper else scale.lower()}{'i' if binary else ''}{suffix}"
    assert parse_size(text) == number * (1024 if binary else 1000) ** ("KMGTPE".index(scale) + 1)


@pytest.mark.parametrize("text,seconds", [
    ("60 days", 60 * 86400), ("7days", 7 * 86400), ("31day", 31 * 86400),
    ("2mo", 62 * 86400), ("3 month", 93 * 86400), ("3 months", 93 * 86400),
    ("1year", 365 * 86400), ("2years", 730 * 86400), ("1 Day", 86400),
])
def test_durations(text: str, seconds: int) -> None:
    """Lease durations: day, month/mo (31 days), year (365 days), optional s."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5", "days", "5 weeks", "five days", "-1 day", ""])
def test_bad_durations(text: str) -> None:
    """A duration without a unit or number is an error."""
    with pytest.raises(ValueError):
        parse_duration(text)


def test_dates() -> None:
    """Cutoff dates are midnight UTC of YYYY-MM-DD."""
    assert parse_date("1970-01-01") == 0
    assert parse_date("2024-01-01") == 1704067200
    for bad in ("2024-13-01", "2024/01/01", "24-01-01", "", "2024-02-30"):
        with pytest.raises(ValueError):
            parse_date(bad)


@pytest.mark.parametrize("text,normal", [
    ("3456", "tcp:3456"), ("tcp:3456", "tcp:3456"),
    ("tcp:3456:interface=127.0.0.1", "tcp:3456:interface=127.0.0.1"),
    ("tcp:port=80:backlog=5", "tcp:port=80:backlog=5"),
    ("tcp:8080:interface=\\:\\:1", "tcp:8080:interface=\\:\\:1"),
    ("tcp6:443", "tcp6:443"), ("ssl:443:privateKey=k.pem:certKey=c.pem",
                               "ssl:443:privateKey=k.pem:certKey=c.pem"),
    ("unix:/tmp/sock:mode=660", "unix:/tmp/sock:mode=660"), ("onion:80", "onion:80"),
])
def test_server_endpoints(text: str, normal: str) -> None:
    """Endpoint strings are checked and a bare number becomes tcp:N."""
    assert parse_server_endpoint(text) == normal
    assert parse(f"[node]\nweb.port = {text}\n").web_port == normal


@pytest.mark.parametrize("text", [
    "tcp:", "tcp:99999", "tcp:abc", "tcp:80:bogus=1", "foo:80", "tcp:80:=x", "none",
    "tcp:80:interface=a:interface=b", "tcp:80:5:h:extra", "unix:", "tcp:-1", "tcp:80:backlog=x",
    "port=80",
])
def test_bad_server_endpoints(text: str) -> None:
    """Bad endpoints are refused, naming [node]web.port."""
    with pytest.raises(BadValue) as info:
        parse(f"[node]\nweb.port = {text}\n")
    assert "[node]web.port" in str(info.value)


def test_web_port_empty_and_zero() -> None:
    """An empty web.port means no web server; port 0 (kernel's choice) is allowed there."""
    assert parse("[node]\nweb.port =\n").web_port is None
    assert parse("[node]\nweb.port = tcp:0:interface=127.0.0.1\n").web_port == \
        "tcp:0:interface=127.0.0.1"


@pytest.mark.parametrize("port,location,ports,hints", [
    ("3457", "tcp:h:3457", ("tcp:3457",), ("tcp:h:3457",)),
    ("tcp:3457,tcp:3458", "tcp:h:3457, tcp:h:3458", ("tcp:3457", "tcp:3458"),
     ("tcp:h:3457", "tcp:h:3458")),
    ("tcp:3457:interface=127.0.0.1", "AUTO", ("tcp:3457:interface=127.0.0.1",), ("AUTO",)),
    ("tcp:3457", "tcp:example.org:3457,AUTO", ("tcp:3457",), ("tcp:example.org:3457", "AUTO")),
    ("tcp:3457", "tor:abcdef.onion:3457", ("tcp:3457",), ("tor:abcdef.onion:3457",)),
    ("tcp:3457", "example.org:3457", ("tcp:3457",), ("example.org:3457",)),
    ("tcp:3457", "tcp:[::1]:3457", ("tcp:3457",), ("tcp:[::1]:3457",)),
    ("disabled", "disabled", (), ()),
])
def test_tub_port_and_location(port: str, location: str, ports: tuple, hints: tuple) -> None:
    """tub.port and tub.location parse to endpoint and hint tuples (storage-protocol.md §7.6)."""
    config = parse(f"[node]\ntub.port = {port}\ntub.location = {location}\n[storage]\n"
                   f"enabled = {'false' if port == 'disabled' else 'true'}\n")
    assert (config.tub_port, config.tub_location) == (ports, hints)
    assert config.tub_listening is (port != "disabled")


@pytest.mark.parametrize("port", ["0", "tcp:0", "", "tcp:3457,tcp:0", "tcp:1,,tcp:2",
                                  "tcp:99999", "bogus", "listen:bogus"])
def test_bad_tub_ports(port: str) -> None:
    """Port 0, an empty value and bad endpoints are refused."""
    with pytest.raises(BadValue, match=r"\[node\]tub.port"):
        parse(f"[node]\ntub.port = {port}\n")


@pytest.mark.parametrize("location", ["", "tcp:host", "tcp::80", "tcp:h:0", "nonsense",
                                      "tcp:h:1,,tcp:h:2", "AUTO,disabled", "tcp:[::1:80",
                                      "tcp:h:65536"])
def test_bad_tub_locations(location: str) -> None:
    """Empty or malformed hints are refused."""
    with pytest.raises(BadValue, match=r"\[node\]tub.location"):
        parse(f"[node]\ntub.port = tcp:3457\ntub.location = {location}\n")


@pytest.mark.parametrize("port,location", [("disabled", "tcp:h:1"), ("tcp:1", "disabled"),
                                           (None, "disabled"), ("disabled", None)])
def test_disabled_must_match(port: str | None, location: str | None) -> None:
    """tub.location is disabled exactly when tub.port is."""
    text = "[node]\n"
    text += f"tub.port = {port}\n" if port else ""
    text += f"tub.location = {location}\n" if location else ""
    with pytest.raises(InconsistentConfig, match="is disabled, but"):
        parse(text + "[storage]\nenabled = false\n")


def test_auto_needs_a_tcp_port() -> None:
    """AUTO (or no tub.location) needs a tcp first endpoint to take the port from."""
    with pytest.raises(InconsistentConfig, match="AUTO"):
        parse("[node]\ntub.port = unix:/tmp/x\n")
    assert parse("[node]\ntub.port = unix:/tmp/x\ntub.location = tcp:h:1\n").tub_port


def test_endpoint_port() -> None:
    """The port of a tcp-like endpoint is found wherever it is written."""
    assert cfg.endpoint_port("tcp:3457:interface=127.0.0.1") == 3457
    assert cfg.endpoint_port("tcp:interface=127.0.0.1:port=80") == 80
    assert cfg.endpoint_port("ssl:443:privateKey=k") == 443
    assert cfg.endpoint_port("unix:/x") is None and cfg.endpoint_port("listen:tor") is None


def test_parse_hint_types() -> None:
    """Hints report their type; legacy host:port is tcp."""
    assert parse_hint("example.org:80") == ("tcp", "example.org:80")
    assert parse_hint("i2p:abc.i2p") == ("i2p", "i2p:abc.i2p")
    assert parse_hint("AUTO") == ("AUTO", "AUTO")


def test_storage_and_helper_need_a_listening_tub() -> None:
    """Storage or the helper with tub.port = disabled is a startup error."""
    disabled = "[node]\ntub.port = disabled\ntub.location = disabled\n"
    with pytest.raises(TubNotListening, match=r"\[storage\]enabled"):
        parse(disabled)
    with pytest.raises(TubNotListening, match=r"\[helper\]enabled"):
        parse(disabled + "[storage]\nenabled = false\n[helper]\nenabled = true\n")
    assert not parse(disabled + "[storage]\nenabled = false\n").tub_listening
    with pytest.raises(TubNotListening, match="introducer"):
        parse(disabled, INTRODUCER)


def test_reveal_ip_rules() -> None:
    """reveal-IP-address = false refuses tcp hints, AUTO, no location and [connections]tcp=tcp."""
    private = "[node]\nreveal-IP-address = false\ntub.port = tcp:3457:interface=127.0.0.1\n"
    tor = "[connections]\ntcp = tor\n"
    for location in ("tcp:h:3457", "h:3457", "AUTO", "tor:x.onion:3457,AUTO"):
        with pytest.raises(PrivacyError):
            parse(private + f"tub.location = {location}\n" + tor)
    with pytest.raises(PrivacyError, match="AUTO or absent"):
        parse(private + tor)
    with pytest.raises(PrivacyError, match=r"\[connections\]tcp"):
        parse(private + "tub.location = tor:x.onion:3457\n")
    config = parse(private + "tub.location = tor:x.onion:3457\n" + tor)
    assert not config.reveal_ip and config.connections_tcp == "tor"
    off = ("[node]\nreveal-IP-address = false\ntub.port = disabled\ntub.location = disabled\n"
           "[connections]\ntcp = disabled\n[storage]\nenabled = false\n")
    assert parse(off).connections_tcp == "disabled"


@pytest.mark.parametrize("value,expected", [("tcp", "tcp"), ("TOR", "tor"),
                                            ("disabled", "disabled")])
def test_connections_tcp(value: str, expected: str) -> None:
    """[connections]tcp is tcp, tor or disabled."""
    assert parse(f"[connections]\ntcp = {value}\n").connections_tcp == expected


def test_connections_tcp_refuses_i2p() -> None:
    """i2p is not a valid [connections]tcp handler."""
    with pytest.raises(BadValue, match=r"\[connections\]tcp"):
        parse("[connections]\ntcp = i2p\n")


# ---------------------------------------------------------------------------
# [client], [storage], [sftpd], [tor], [i2p], [node] details
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("k,h,n", [(1, 1, 1), (3, 7, 10), (256, 256, 256), (2, 2, 5)])
def test_good_shares(k: int, h: int, n: int) -> None:
    """k <= happy <= N <= 256 is accepted."""
    client = parse(f"[client]\nshares.needed={k}\nshares.happy={h}\nshares.total={n}\n").client
    assert (client.shares_needed, client.shares_happy, client.shares_total) == (k, h, n)


@pytest.mark.parametrize("k,h,n,key", [
    (4, 7, 3, "shares.total"), (3, 11, 10, "shares.happy"), (3, 2, 10, "shares.happy"),
    (3, 7, 257, "shares.total"),
])
def test_inconsistent_shares(k: int, h: int, n: int, key: str) -> None:
    """Shares outside k <= happy <= N <= 256 are refused, naming a key."""
    with pytest.raises(InconsistentConfig) as info:
        parse(f"[client]\nshares.needed={k}\nshares.happy={h}\nshares.total={n}\n")
    assert info.value.key == key and "[client]" in str(info.value)


@pytest.mark.parametrize("value", ["x", "", "3.0", "0", "-3", "0x3"])
def test_bad_share_integers(value: str) -> None:
    """shares.* must be positive integers."""
    with pytest.raises(BadValue, match=r"\[client\]shares.needed"):
        parse(f"[client]\nshares.needed = {value}\n")


def test_client_values() -> None:
    """The other [client] keys parse to typed values."""
    client = parse("[client]\nmutable.format = MDMF\npeers.preferred = v0-a, v0-b,,\n"
                   "force_foolscap = yes\nstorage.plugins = a,b\n"
                   "shares._max_immutable_segment_size_for_testing = 131072\n"
                   "helper.furl = None\n").client
    assert client.mutable_format == "mdmf"
    assert client.preferred_peers == ("v0-a", "v0-b")
    assert client.force_foolscap and client.storage_plugins == ("a", "b")
    assert client.max_segment_size == 131072 and client.helper_furl is None
    assert client.encoding_parameters().max_segment_size == 131072
    with pytest.raises(BadValue, match="mutable.format"):
        parse("[client]\nmutable.format = xdmf\n")


def test_introducer_furl_in_tahoe_cfg() -> None:
    """The deprecated [client]introducer.furl works with a warning; 'None' is an error."""
    config = parse("[client]\nintroducer.furl = pb://t@tcp:h:1/s\nkey_generator.furl = pb://k\n")
    assert config.client.introducer_furl == "pb://t@tcp:h:1/s"
    assert any("deprecated" in w for w in config.warnings)
    assert any("ignored" in w for w in config.warnings)
    assert parse("[client]\nintroducer.furl =\n").client.introducer_furl is None
    with pytest.raises(BadValue, match="introducer.furl"):
        parse("[client]\nintroducer.furl = None\n")


def test_unescaped_hash_in_furl() -> None:
    """A '#' in a FURL key is refused unless escaped (it would be a lost comment)."""
    with pytest.raises(BadValue, match=r"\[client\]helper.furl.*unescaped '#'"):
        parse("[client]\nhelper.furl = pb://x@tcp:h:1/s # my helper\n")
    assert parse("[client]\nhelper.furl = pb://x\\#y\n").client.helper_furl == "pb://x\\#y"
    with pytest.raises(BadValue, match="log_gatherer.furl"):
        parse("[node]\nlog_gatherer.furl = a#b\n")


def test_storage_values() -> None:
    """The [storage] keys parse to typed values."""
    storage = parse("[storage]\nanonymous = false\nreadonly = true\nstorage_dir = /srv/s\n"
                    "plugins = p1, p2\ngrid_management = on\nforce_foolscap = 1\n"
                    "debug_discard = yes\n").storage
    assert (storage.anonymous, storage.readonly, storage.storage_dir) == (False, True, "/srv/s")
    assert storage.plugins == ("p1", "p2")
    assert storage.grid_management and storage.force_foolscap and storage.debug_discard


def test_expire_rules() -> None:
    """Lease expiry: mode required when enabled; cutoff-date needs a date (§5.5)."""
    with pytest.raises(MissingValue, match=r"\[storage\]expire.mode"):
        parse("[storage]\nexpire.enabled = true\n")
    with pytest.raises(MissingValue, match="expire.cutoff_date"):
        parse("[storage]\nexpire.enabled = true\nexpire.mode = cutoff-date\n")
    with pytest.raises(BadValue, match="expire.mode"):
        parse("[storage]\nexpire.mode = sometimes\n")
    with pytest.raises(BadValue, match="expire.cutoff_date"):
        parse("[storage]\nexpire.mode = cutoff-date\nexpire.cutoff_date = 1/2/2024\n")
    with pytest.raises(BadValue, match="expire.override_lease_duration"):
        parse("[storage]\nexpire.override_lease_duration = 5\n")
    expire = parse("[storage]\nexpire.enabled = true\nexpire.mode = age\n"
                   "expire.override_lease_duration = 60 days\nexpire.immutable = false\n"
                   ).storage.expire
    assert (expire.enabled, expire.mode, expire.override_lease_duration) == (
        True, "age", 60 * 86400)
    assert not expire.immutable and expire.mutable
    expire = parse("[storage]\nexpire.enabled = true\nexpire.mode = cutoff-date\n"
                   "expire.cutoff_date = 2024-01-01\n").storage.expire
    assert expire.cutoff_date == 1704067200


def test_sftpd() -> None:
    """An enabled SFTP server needs its key files and accounts file."""
    with pytest.raises(MissingValue, match=r"\[sftpd\]host_pubkey_file"):
        parse("[sftpd]\nenabled = true\n")
    sftpd = parse("[sftpd]\nenabled = true\nport = 8022\nhost_pubkey_file = k.pub\n"
                  "host_privkey_file = k\naccounts.file = accounts\n").sftpd
    assert sftpd.port == "tcp:8022" and sftpd.accounts_file == "accounts"


def test_tor_and_i2p() -> None:
    """[tor] and [i2p] keys parse; onion and dest need their companion keys."""
    tor = parse("[tor]\nonion = true\nonion.local_port = 3457\nonion.external_port = 3457\n"
                "onion.private_key_file = private/tor_onion.privkey\n"
                "socks.port = tcp:127.0.0.1:9050\n").tor
    assert tor.onion and tor.onion_local_port == 3457 and tor.socks_port == "tcp:127.0.0.1:9050"
    with pytest.raises(MissingValue, match=r"\[tor\]onion.local_port"):
        parse("[tor]\nonion = true\n")
    with pytest.raises(InconsistentConfig, match=r"\[tor\]control.port"):
        parse("[tor]\nlaunch = true\ncontrol.port = tcp:127.0.0.1:9051\n")
    with pytest.raises(MissingValue, match=r"\[i2p\]dest.port"):
        parse("[i2p]\ndest = true\n")
    with pytest.raises(InconsistentConfig, match="listen:tor"):
        parse("[node]\ntub.port = listen:tor\ntub.location = tor:x.onion:80\n")
    i2p = parse("[node]\ntub.port = listen:i2p\ntub.location = i2p:x.i2p\n"
                "[i2p]\ndest = true\ndest.port = 3457\ndest.private_key_file = k\n")
    assert i2p.tub_port == ("listen:i2p",) and i2p.i2p.dest_port == "3457"


def test_node_values() -> None:
    """Timeouts are integers; paths are kept as written."""
    config = parse("[node]\ntimeout.keepalive = 60\ntimeout.disconnect =\ntempdir = ~/t\n"
                   "web.static = www\nlog_gatherer.furl = pb://g\n")
    assert (config.timeout_keepalive, config.timeout_disconnect) == (60, None)
    assert (config.tempdir, config.web_static, config.log_gatherer_furl) == ("~/t", "www",
                                                                             "pb://g")
    assert [w for w in config.warnings if "log_gatherer.furl is ignored" in w]
    with pytest.raises(BadValue, match="timeout.keepalive"):
        parse("[node]\ntimeout.keepalive = soon\n")


ERRORS = [
    ("[client]\nbogus = 1\n", UnknownOption, "client", "bogus"),
    ("[storage]\nenabled = maybe\n", BadValue, "storage", "enabled"),
    ("[storage]\nreserved_space = lots\n", BadValue, "storage", "reserved_space"),
    ("[client]\nshares.total = ten\n", BadValue, "client", "shares.total"),
    ("[node]\ntub.port = 0\n", BadValue, "node", "tub.port"),
    ("[node]\ntub.location =\n", BadValue, "node", "tub.location"),
    ("[node]\nweb.port = tcp:x\n", BadValue, "node", "web.port"),
    ("[storage]\nexpire.enabled = 1\n", MissingValue, "storage", "expire.mode"),
    ("[client]\nshares.happy = 11\n", InconsistentConfig, "client", "shares.happy"),
    ("[node]\ntub.port = disabled\ntub.location = disabled\n", TubNotListening,
     "storage", "enabled"),
    ("[node]\nreveal-ip-address = no\n", PrivacyError, "node", "tub.location"),
]


@pytest.mark.parametrize("text,cls,section,key", ERRORS, ids=[e[1].__name__ for e in ERRORS])
def test_errors_name_file_section_key_and_problem(text: str, cls: type, section: str,
                                                   key: str) -> None:
    """Every error names the file, the section and key, and says what is wrong."""
    with pytest.raises(cls) as info:
        parse(text)
    error = info.value
    assert isinstance(error, ConfigError) and isinstance(error, ValueError)
    assert (error.filename, error.section, error.key) == (FILE, section, key)
    assert FILE in str(error) and f"[{section}]" in str(error) and key in str(error)
    assert error.problem and error.problem in str(error)


# ---------------------------------------------------------------------------
# Old-style files and YAML
# ---------------------------------------------------------------------------

def test_old_config_files() -> None:
    """Pre-1.3 single-value files are refused, listing them (frontends.md §1.1)."""
    check_old_config_files(["tahoe.cfg", "private", "node.url", "storage"], "/n")
    with pytest.raises(OldConfigError) as info:
        check_old_config_files(["tahoe.cfg", "webport", "nickname"], "/n")
    assert info.value.names == ("nickname", "webport")
    assert "/n" in str(info.value) and "'webport'" in str(info.value)
    for name in cfg.OLD_CONFIG_FILES:
        with pytest.raises(OldConfigError):
            check_old_config_files([name], "/n")


def test_introducer_keeps_its_own_furl_file() -> None:
    """An introducer's own introducer.furl is not an old config file."""
    check_old_config_files(["introducer.furl"], "/i", INTRODUCER)
    with pytest.raises(OldConfigError):
        check_old_config_files(["introducer.furl"], "/c", CLIENT)


YAML_FILE = "/n/private/introducers.yaml"


def test_introducers_yaml() -> None:
    """introducers.yaml maps petnames to FURLs, in file order."""
    text = ("introducers:\n  default:\n    furl: pb://a@tcp:h:1/x\n"
            "  other-grid:\n    furl: \"pb://b@tcp:h:2/y\"\n")
    assert parse_introducers_yaml(text, YAML_FILE) == {
        "default": "pb://a@tcp:h:1/x", "other-grid": "pb://b@tcp:h:2/y"}
    assert list(parse_introducers_yaml(text, YAML_FILE)) == ["default", "other-grid"]
    assert parse_introducers_yaml("introducers: {}\n", YAML_FILE) == {}
    assert parse_introducers_yaml("other: 1\n", YAML_FILE) == {}
    assert parse_introducers_yaml("\ufeffintroducers:\n", YAML_FILE) == {}


@pytest.mark.parametrize("text,match", [
    ("", "empty"), ("introducers: [a, b]\n", "map petnames"), ("- 1\n", "mapping"),
    ("introducers:\n  1:\n    furl: pb://x\n", "not a string"),
    ("introducers:\n  a: {}\n", "no 'furl'"), ("introducers:\n  a:\n    furl: 5\n", "string"),
    ("introducers: {a: {furl: ''}}\n", "non-empty"), ("introducers: [\n", "not valid YAML"),
])
def test_bad_introducers_yaml(text: str, match: str) -> None:
    """Malformed introducers.yaml is refused with the file name and the problem."""
    with pytest.raises(MalformedConfigFile, match=match) as info:
        parse_introducers_yaml(text, YAML_FILE)
    assert YAML_FILE in str(info.value)


def test_default_introducer_defined_twice() -> None:
    """'default' may come from tahoe.cfg or introducers.yaml, not both (§7.7)."""
    config = parse("[client]\nintroducer.furl = pb://cfg\n")
    assert introducer_furls(config, {"other": "pb://o"}) == {"other": "pb://o",
                                                             "default": "pb://cfg"}
    assert introducer_furls(parse(""), {"default": "pb://y"}) == {"default": "pb://y"}
    with pytest.raises(IntroducerConflict) as info:
        introducer_furls(config, {"default": "pb://y"}, YAML_FILE)
    assert FILE in str(info.value) and YAML_FILE in str(info.value)
    assert "'default'" in str(info.value)


SERVERS_FILE = "/n/private/servers.yaml"


def test_servers_yaml() -> None:
    """servers.yaml gives static servers with their announcements (frontends.md §1.6)."""
    text = ("storage:\n  v0-abc:\n    ann:\n      nickname: s1\n"
            "      anonymous-storage-FURL: pb://s@tcp:h:1/x\n"
            "      permutation-seed-base32: aaaa\n    connections:\n      tcp: tor\n"
            "  v0-def:\n    ann: {nickname: s2}\n")
    servers = parse_servers_yaml(text, SERVERS_FILE)
    assert list(servers) == ["v0-abc", "v0-def"]
    assert servers["v0-abc"].announcement["anonymous-storage-FURL"] == "pb://s@tcp:h:1/x"
    assert servers["v0-abc"].connections == (("tcp", "tor"),)
    assert servers["v0-def"].connections == ()
    assert parse_servers_yaml("", SERVERS_FILE) == {}
    assert parse_servers_yaml("storage:\n", SERVERS_FILE) == {}


@pytest.mark.parametrize("text,match", [
    ("[1]\n", "mapping"), ("storage: 5\n", "map server ids"), ("storage:\n  v0-a: {}\n", "ann"),
    ("storage:\n  v0-a:\n    ann: {nickname: 5}\n", "nickname"),
    ("storage:\n  v0-a:\n    ann: {}\n    connections: {tcp: carrier-pigeon}\n", "tcp"),
    ("storage:\n  v0-a:\n    ann: {}\n    connections: [tcp]\n", "connections"),
    ("storage: {\n", "not valid YAML"),
])
def test_bad_servers_yaml(text: str, match: str) -> None:
    """Malformed servers.yaml is refused with the file name and the problem."""
    with pytest.raises(MalformedConfigFile, match=match) as info:
        parse_servers_yaml(text, SERVERS_FILE)
    assert SERVERS_FILE in str(info.value)
