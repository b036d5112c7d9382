"""The settings of a node directory, as frozen values (pure).

What :func:`tahoe.node.config.parse_config` returns: one value per
``tahoe.cfg`` section, gathered in :class:`NodeConfig`. Defaults are Tahoe
1.20's (``reference/frontends.md`` §1.4-1.6). Import them from
:mod:`tahoe.node.config`, the package's facade.
"""
from __future__ import annotations

from attrs import field, frozen

from ..immutable.params import DEFAULT_MAX_SEGMENT_SIZE, EncodingParameters

__all__ = ["CLIENT", "INTRODUCER", "NODE_TYPES", "DEFAULT_NICKNAME", "DEFAULT_SFTP_PORT",
           "DEFAULT_S3_PORT", "DEFAULT_S3_MULTIPART_MAX_AGE", "S3Config",
           "ClientConfig", "ExpireConfig", "I2PConfig", "NodeConfig", "SftpConfig",
           "StorageConfig", "TorConfig"]

CLIENT = "client"
INTRODUCER = "introducer"
NODE_TYPES = (CLIENT, INTRODUCER)
DEFAULT_NICKNAME = "<unspecified>"
DEFAULT_SFTP_PORT = "tcp:8022"
#: The S3 gateway listens on the loopback interface unless told otherwise (as the web gateway).
DEFAULT_S3_PORT = "tcp:3458:interface=127.0.0.1"
#: Seconds after which an unfinished multipart upload is removed (7 days).
DEFAULT_S3_MULTIPART_MAX_AGE = 7 * 24 * 3600


@frozen
class TorConfig:
    """``[tor]``: how to reach or launch Tor (frontends.md §1.5). Paths stay as written."""

    enabled: bool = True
    launch: bool = False
    socks_port: str | None = None
    control_port: str | None = None
    executable: str | None = None
    onion: bool = False
    onion_local_port: int | None = None
    onion_external_port: int | None = None
    onion_private_key_file: str | None = None


@frozen
class I2PConfig:
    """``[i2p]``: how to reach or launch I2P (frontends.md §1.5)."""

    enabled: bool = True
    launch: bool = False
    sam_port: str | None = None
    configdir: str | None = None
    executable: str | None = None
    dest: bool = False
    dest_port: str | None = None
    dest_private_key_file: str | None = None


@frozen
class ClientConfig:
    """``[client]``: upload parameters, helper, introducer (deprecated key) and peers.

    ``shares_needed <= shares_happy <= shares_total <= 256`` always holds.
    """

    introducer_furl: str | None = None
    helper_furl: str | None = None
    shares_needed: int = 3
    shares_happy: int = 7
    shares_total: int = 10
    max_segment_size: int = DEFAULT_MAX_SEGMENT_SIZE
    mutable_format: str = "sdmf"
    preferred_peers: tuple[str, ...] = ()
    force_foolscap: bool = False
    storage_plugins: tuple[str, ...] = ()

    def encoding_parameters(self) -> EncodingParameters:
        """k, happy, N and the maximum segment size as the immutable uploader takes them."""
        return EncodingParameters(self.shares_needed, self.shares_happy, self.shares_total,
                                  self.max_segment_size)


@frozen
class ExpireConfig:
    """``[storage]expire.*``: lease-expiry garbage collection (storage-protocol.md §5.5).

    :ivar override_lease_duration: seconds, or ``None``.
    :ivar cutoff_date: seconds since the epoch (midnight UTC), set in cutoff-date mode.
    """

    enabled: bool = False
    mode: str = "age"
    override_lease_duration: int | None = None
    cutoff_date: int | None = None
    immutable: bool = True
    mutable: bool = True


@frozen
class StorageConfig:
    """``[storage]``: the storage server. ``reserved_space`` is in bytes.

    ``enabled`` is false for an introducer, whatever the file says.
    ``storage_dir`` is as written: relative paths are relative to the node directory.
    """

    enabled: bool = True
    anonymous: bool = True
    readonly: bool = False
    reserved_space: int = 0
    storage_dir: str = "storage"
    expire: ExpireConfig = ExpireConfig()
    plugins: tuple[str, ...] = ()
    grid_management: bool = False
    force_foolscap: bool = False
    debug_discard: bool = False


@frozen
class SftpConfig:
    """``[sftpd]``; when enabled, the two host key files and the accounts file are set."""

    enabled: bool = False
    port: str = DEFAULT_SFTP_PORT
    host_pubkey_file: str | None = None
    host_privkey_file: str | None = None
    accounts_file: str | None = None


@frozen
class S3Config:
    """``[s3]``: the S3-compatible gateway (``docs/s3.md``).

    :ivar port: a Twisted server endpoint string.
    :ivar accounts_file: the accounts file, relative to the node directory.
    :ivar region: the region requests must be signed for, and GetBucketLocation's answer.
    :ivar multipart_max_age: seconds after its start at which an unfinished
        multipart upload is removed with its parts.
    """

    enabled: bool = False
    port: str = DEFAULT_S3_PORT
    accounts_file: str = "private/s3-accounts"
    region: str = "us-east-1"
    multipart_max_age: int = DEFAULT_S3_MULTIPART_MAX_AGE


@frozen
class NodeConfig:
    """Everything ``tahoe.cfg`` says, validated and typed (frontends.md §1.5).

    Paths (``web_static``, ``tempdir``, ``storage.storage_dir``, …) are kept as
    written; the shell resolves them against the node directory.

    :ivar filename: the name of the file the values came from (for messages).
    :ivar node_type: ``"client"`` or ``"introducer"``.
    :ivar nickname: ``[node]nickname``; ``"<unspecified>"`` when absent.
    :ivar web_port: the web server's endpoint (``"3456"`` becomes ``"tcp:3456"``),
        or ``None`` for no web server (key absent or empty).
    :ivar tub_port: the Tub's listening endpoints, bare numbers turned into
        ``tcp:N``; ``()`` when ``disabled``; ``None`` when the key is absent (reuse
        ``client.port`` or let the kernel choose).
    :ivar tub_location: the connection hints for FURLs, possibly including
        ``"AUTO"``; ``()`` when ``disabled``; ``None`` when absent (means AUTO).
    :ivar timeout_keepalive: seconds, or ``None`` (Foolscap's default).
    :ivar timeout_disconnect: seconds, or ``None`` (disabled).
    :ivar connections_tcp: ``[connections]tcp``: ``"tcp"``, ``"tor"`` or ``"disabled"``.
    :ivar storage_server_plugins: ``(name, ((key, value), …))`` per
        ``[storageserver.plugins.<name>]`` section, sorted.
    :ivar storage_client_plugins: likewise for ``[storageclient.plugins.<name>]``.
    :ivar grid_managers: ``[grid_managers]`` ``(name, public key)`` pairs.
    :ivar grid_manager_certificates: ``[grid_manager_certificates]`` ``(name, file)`` pairs.
    :ivar warnings: deprecation notes the node should log (not errors).
    """

    filename: str = "tahoe.cfg"
    node_type: str = CLIENT
    nickname: str = DEFAULT_NICKNAME
    web_port: str | None = None
    web_static: str = "public_html"
    tub_port: tuple[str, ...] | None = None
    tub_location: tuple[str, ...] | None = None
    reveal_ip: bool = True
    tempdir: str = "tmp"
    log_gatherer_furl: str | None = None
    timeout_keepalive: int | None = None
    timeout_disconnect: int | None = None
    connections_tcp: str = "tcp"
    tor: TorConfig = TorConfig()
    i2p: I2PConfig = I2PConfig()
    client: ClientConfig = ClientConfig()
    storage: StorageConfig = StorageConfig()
    helper_enabled: bool = False
    sftpd: SftpConfig = SftpConfig()
    s3: S3Config = S3Config()
    storage_server_plugins: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    storage_client_plugins: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    grid_managers: tuple[tuple[str, str], ...] = ()
    grid_manager_certificates: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = field(default=(), eq=False)

    @property
    def tub_listening(self) -> bool:
        """Whether the Tub listens at all (``tub.port`` is not ``disabled``)."""
        return self.tub_port != ()

    def storage_server_plugin(self, name: str) -> dict[str, str]:
        """The keys of ``[storageserver.plugins.<name>]`` (empty if there is no such section)."""
        return dict(dict(self.storage_server_plugins).get(name, ()))

    def storage_client_plugin(self, name: str) -> dict[str, str]:
        """The keys of ``[storageclient.plugins.<name>]`` (empty if there is no such section)."""
        return dict(dict(self.storage_client_plugins).get(name, ()))


# ---------------------------------------------------------------------------
# INI reading and name validation
# ---------------------------------------------------------------------------
