"""The S3 gateway as a service of a client node: ``[s3]`` in ``tahoe.cfg`` (``docs/s3.md``).

::

    [s3]
    enabled = true
    port = tcp:3458:interface=127.0.0.1
    accounts.file = private/s3-accounts
    region = us-east-1
    multipart.max_age = 7 days

:func:`start_s3` reads the accounts file (``ACCESS_KEY_ID SECRET_ACCESS_KEY
ROOTCAP`` per line, :mod:`.accounts`; it must not be readable by others: mode
0600), listens on ``port`` and writes ``s3.url`` into the node directory
once listening. The file is read again when it changes (checked at every
request: ``tahoe s3 add-account`` on a running node, or a line removed to revoke
a key, takes effect at the next request); a file that became malformed (or
readable by others) keeps the accounts read before, and the log says why. Unfinished multipart uploads older than
``multipart.max_age`` are removed at the start and every hour.

:class:`S3Gateway` authenticates each request (:mod:`.sigv4`) and routes it
to an operation (:mod:`.operations`, :mod:`.multipart`).
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any

from twisted.internet.endpoints import serverFromString
from twisted.internet.task import LoopingCall
from twisted.python import log

from ..node.fileutil import write_atomically
from .errors import S3Error
from .channel import SPOOL_PREFIX, S3Site
from .server import Context, S3Resource

__all__ = ["S3GatewayError", "S3Gateway", "start_s3", "read_accounts"]

#: Seconds between two looks for abandoned multipart uploads.
CLEANUP_PERIOD = 3600.0
#: Sub-resources of a bucket that select an operation of their own.
BUCKET_SUBRESOURCES = ("location", "versioning", "list-type", "delete", "uploads", "acl",
                       "policy", "cors", "lifecycle", "tagging", "website", "logging",
                       "notification", "replication", "encryption", "object-lock",
                       "accelerate", "requestPayment", "ownershipControls",
                       "publicAccessBlock", "intelligent-tiering", "inventory", "metrics",
                       "analytics", "policyStatus")
#: Sub-resources of an object that select an operation of their own.
OBJECT_SUBRESOURCES = ("uploads", "uploadId", "acl", "tagging", "retention", "legal-hold",
                       "torrent", "restore", "select", "attributes")


class S3GatewayError(Exception):
    """The S3 gateway cannot start (the message says why)."""


def read_accounts(path: str) -> dict[str, Any]:
    """The accounts of the file at ``path``: access key -> account.

    :raises S3GatewayError: if it cannot be read, is readable by others than its owner,
        or is malformed (the message names the line; never a secret or a cap).
    """
    from .accounts import AccountsError, parse_accounts
    try:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise S3GatewayError(f"the S3 accounts file {path} may be read by other users"
                                 f" (mode {stat.S_IMODE(mode):04o}); it holds secrets:"
                                 f" chmod 600 {path}")
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise S3GatewayError(f"cannot read the S3 accounts file {path}: {e}") from None
    try:
        return {account.access_key: account for account in parse_accounts(text)}
    except AccountsError as e:
        raise S3GatewayError(f"{path}: {e}") from None


class S3Gateway:
    """Authenticates and routes the requests of every account.

    :param accounts_path: the accounts file (read again when it changes).
    :param services: the node's client services (``ClientServices``).
    :param clock: the reactor (request times, timers).
    :param region: requests must be signed for this region.
    :param basedir: the node directory (multipart staging under ``private/``).
    """

    def __init__(self, accounts_path: str, services: Any, clock: Any, region: str,
                 basedir: str, multipart_max_age: int) -> None:
        self.accounts_path = accounts_path
        self.services = services
        self.clock = clock
        self.region = region
        self.basedir = basedir
        self.multipart_max_age = multipart_max_age
        self.accounts: dict[str, Any] = {}
        self._accounts_stamp: tuple[float, int, int] | None = None
        self._stores: dict[str, Any] = {}
        self.port: Any = None
        self._cleanup: LoopingCall | None = None
        self._uploads: Any = None

    # -- accounts

    def _stamp(self) -> tuple[float, int, int] | None:
        try:
            st = os.stat(self.accounts_path)
        except OSError:
            return None
        return st.st_mtime, st.st_size, st.st_ino

    def load_accounts(self) -> None:
        """Read the accounts file (a missing one is no account yet).

        :raises S3GatewayError: as :func:`read_accounts`.
        """
        stamp = self._stamp()
        self.accounts = {} if stamp is None else read_accounts(self.accounts_path)
        self._accounts_stamp = stamp

    def _account(self, access_key: str) -> Any:
        """The account of ``access_key``, the file read again first if it changed (one
        ``stat`` a request: an account added or removed counts from the next request)."""
        if self._stamp() != self._accounts_stamp:
            try:
                self.load_accounts()
            except S3GatewayError as error:
                # the accounts read before stay; the log says why the new file is not used
                log.msg(f"S3 accounts not reloaded: {error}")
                self._accounts_stamp = self._stamp()
        return self.accounts.get(access_key)

    def store_for(self, account: Any) -> Any:
        """The :class:`~.store.AccountStore` of an account (one per root, kept)."""
        from .store import AccountStore
        key = account.root.to_string()
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = AccountStore(self.services, account.root)
        return store

    # -- requests

    async def authenticate(self, context: Context) -> None:
        """Check the request's signature (Signature Version 4, or the legacy version 2 that
        ``aws s3 presign`` and boto3's presigned URLs use unless told otherwise); fill in
        its account and store.

        :raises S3Error: ``AccessDenied`` (anonymous, expired), ``InvalidAccessKeyId``,
            ``SignatureDoesNotMatch``, ``RequestTimeTooSkewed``, ``AuthorizationHeaderMalformed``...
        """
        account, signed, context.signing_key, host_signed = self.verify(
            context.method, context.raw_path, context.raw_query, context.headers,
            context.virtual_bucket, context.host_bucket)
        if host_signed:
            context.use_host_bucket(context.host_bucket)  # type: ignore[arg-type]
        context.signed = signed
        context.payload_hash = signed.payload_hash
        context.account = account
        context.store = self.store_for(account)
        context.services = self.services
        context.gateway_region = self.region
        context.gateway = self
        candidate = context.host_bucket
        if candidate is not None and (
                (context.method == "PUT" and not context.bucket)  # CreateBucket
                or await context.store.has_bucket(candidate)):
            context.use_host_bucket(candidate)
        if context.method in ("PUT", "POST"):
            self.services.expect_use()  # new mutable directories will need RSA keys

    def verify(self, method: str, raw_path: str, raw_query: str, headers: dict[str, str],
               virtual_bucket: str | None, host_bucket: str | None
               ) -> tuple[Any, Any, bytes, bool]:
        """Check a request's signature: its account, the parsed signature, the signing key
        (for aws-chunked bodies) and whether it signed ``host_bucket`` (a Host's first
        label) as its virtual-host bucket (Signature Version 2 signs that).

        :raises S3Error: as :meth:`authenticate`.
        """
        from . import sigv4
        signed = sigv4.parse_request_auth(method, raw_path, raw_query, headers, allow_v2=True)
        account = self._account(signed.credential.access_key)
        if account is None:
            raise S3Error("InvalidAccessKeyId", AWSAccessKeyId=signed.credential.access_key)

        def check(virtual_host_bucket: str | None) -> bytes:
            return sigv4.verify_request(
                signed, account.secret, method, raw_path, raw_query, headers,
                now=self.clock.seconds(), region=self.region,
                virtual_host_bucket=virtual_host_bucket)
        try:
            return account, signed, check(virtual_bucket), False
        except S3Error as error:
            if error.code != "SignatureDoesNotMatch" or host_bucket is None:
                raise
            return account, signed, check(host_bucket), True

    def route(self, context: Context) -> Callable[[Context], Any]:
        """The operation a request asks for.

        :raises S3Error: ``NotImplemented`` for a sub-resource the gateway does not
            serve, ``MethodNotAllowed`` for a method that has no meaning there.
        """
        from .operations import OPERATIONS
        query = context.query
        if not context.bucket:
            what, known = "service", ()
        elif not context.key:
            what, known = "bucket", BUCKET_SUBRESOURCES
        else:
            what, known = "object", OBJECT_SUBRESOURCES
        given = [name for name in known if name in query]
        if what == "bucket" and query.get("list-type") not in (None, "2"):
            raise S3Error("InvalidArgument", "list-type must be 2.",
                          ArgumentName="list-type", ArgumentValue=query["list-type"])
        if given:
            what = f"{what}?{given[0]}"
        operation = OPERATIONS.get((context.method, what))
        if operation is None:
            from .multipart import OPERATIONS as MULTIPART
            operation = MULTIPART.get((context.method, what))
        if operation is None:
            if given:
                raise S3Error("NotImplemented", f"This gateway does not implement"
                              f" {context.method} on the '{given[0]}' sub-resource.")
            raise S3Error("MethodNotAllowed", Method=context.method,
                          ResourceType=what.upper())
        return operation  # type: ignore[no-any-return]

    # -- life

    @property
    def uploads(self) -> Any:
        """The multipart uploads staged on this node (:class:`.multipart.Staging`)."""
        if self._uploads is None:
            from .staging import Staging
            self._uploads = Staging(os.path.join(self.basedir, "private", "s3-multipart"))
        return self._uploads

    def start_cleanup(self) -> None:
        """Remove abandoned multipart uploads now and every :data:`CLEANUP_PERIOD` s."""
        def clean() -> None:
            staging = os.path.join(self.basedir, "private", "s3-multipart")
            if not os.path.isdir(staging):
                return
            try:
                removed = self.uploads.remove_older_than(self.clock.seconds()
                                                         - self.multipart_max_age)
            except Exception as error:  # noqa: BLE001 (a timer: logged, tried again later)
                log.msg(f"S3 multipart cleanup failed: {type(error).__name__}: {error}")
                return
            if removed:
                log.msg(f"S3: removed {removed} multipart uploads older than"
                        f" {self.multipart_max_age} s")
        self._cleanup = LoopingCall(clean)
        self._cleanup.clock = self.clock
        self._cleanup.start(CLEANUP_PERIOD, now=True)

    async def stop(self) -> None:
        """Stop listening and the cleanup timer."""
        if self._cleanup is not None and self._cleanup.running:
            self._cleanup.stop()
        if self.port is not None:
            await self.port.stopListening()


def _own_hosts(port: str) -> frozenset[str]:
    hosts = {"127.0.0.1", "localhost", "::1"}
    for part in port.split(":"):
        if part.startswith("interface="):
            hosts.add(part[len("interface="):].lower())
    return frozenset(hosts)


def _remove_leftover_spools(basedir: str) -> None:
    """Remove the part spools (``s3-part-*``, named files removed when their request ends)
    that a killed gateway left in its temporary directory: only in the node's own
    (``NODEDIR/tmp``), as a directory set with ``[node]tempdir`` may be shared."""
    import tempfile
    own = os.path.realpath(os.path.join(basedir, "tmp"))
    if os.path.realpath(tempfile.gettempdir()) != own:
        return
    try:
        names = [name for name in os.listdir(own) if name.startswith(SPOOL_PREFIX)]
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(own, name))
        except OSError:
            pass
    if names:
        log.msg(f"S3 gateway: removed {len(names)} part spools left by an earlier run")


async def start_s3(reactor: Any, basedir: str, settings: Any, services: Any) -> S3Gateway:
    """Listen for S3 clients as ``settings`` (an ``S3Config``) says; ``s3.url`` is written
    once listening.

    :returns: the gateway (``await gateway.stop()`` at shutdown).
    :raises S3GatewayError: if the accounts file cannot be used.
    """
    accounts_path = os.path.join(basedir, os.path.expanduser(settings.accounts_file))
    gateway = S3Gateway(accounts_path, services, reactor, settings.region, basedir,
                        settings.multipart_max_age)
    gateway.load_accounts()
    _remove_leftover_spools(basedir)
    if not gateway.accounts:
        log.msg(f"S3 gateway: no accounts yet in {accounts_path}"
                " (add one with 'tahoe s3 add-account')")
    site = S3Site(S3Resource(gateway, _own_hosts(settings.port)))
    gateway.port = await serverFromString(reactor, settings.port).listen(site)
    write_atomically(os.path.join(basedir, "s3.url"),
                     f"http://127.0.0.1:{gateway.port.getHost().port}/\n")
    gateway.start_cleanup()
    log.msg(f"S3 gateway listening on {settings.port} ({len(gateway.accounts)} accounts)")
    return gateway
