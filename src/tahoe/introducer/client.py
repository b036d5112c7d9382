"""The client side of the introducer: publish our announcements, receive everyone else's.

Behaviour of a 1.20 node (``reference/storage-protocol.md`` §7.2): connect
(reconnecting forever), check the introducer speaks v2, publish each signed
announcement with one canary per introducer, subscribe, and verify every
announcement received on its own, keeping one per (service, key) with the
seqnum rule. Accepted announcements are cached in
``private/introducer_<petname>_cache.yaml``.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from foolscap.api import Referenceable, Tub
from twisted.python import log
from zope.interface import implementer

from ..node.fileutil import write_atomically
from .announcement import (AnnouncementTable, VerifiedAnnouncement, check_introducer_version,
                           subscriber_info, verify_announcement)
from .errors import BadAnnouncement, IntroducerError
from .interfaces import RIIntroducerSubscriberClient_v2

AnnouncementTuple = tuple[bytes, bytes, bytes]


@implementer(RIIntroducerSubscriberClient_v2)
class IntroducerClient(Referenceable):  # type: ignore[misc]
    """One connection to one introducer.

    :param furl: the introducer's FURL.
    :param nickname: this node's nickname (sent in ``subscriber_info``).
    :param my_version: this software's version string.
    :param on_announcement: called with each newly accepted announcement.
    :param cache_file: where accepted announcements are remembered, or None.
    """

    def __init__(self, tub: Tub, furl: str, nickname: str, my_version: str,
                 on_announcement: Callable[[VerifiedAnnouncement], None],
                 cache_file: Path | None = None) -> None:
        self._tub = tub
        self.furl = furl
        self._nickname = nickname
        self._my_version = my_version
        self._on_announcement = on_announcement
        self._cache_file = cache_file
        self._table = AnnouncementTable()
        self._published: dict[str, AnnouncementTuple] = {}
        self._subscriptions: set[str] = set()
        self._canary = Referenceable()
        self._rref: Any = None
        self._hint: str | None = None
        self._reconnector: Any = None
        self.last_error: str | None = None

    # -- what the node asks of us

    def subscribe_to(self, service_name: str) -> None:
        """Ask for announcements of ``service_name`` (now and after every reconnect)."""
        self._subscriptions.add(service_name)
        if self._rref is not None:
            self._subscribe(self._rref, service_name)

    def publish(self, service_name: str, signed: AnnouncementTuple) -> None:
        """Publish a signed announcement (now and after every reconnect)."""
        self._published[service_name] = signed
        if self._rref is not None:
            self._publish(self._rref, signed)

    def start(self) -> None:
        """Load the cache, then connect and keep reconnecting."""
        self._load_cache()
        self._reconnector = self._tub.connectTo(self.furl, self._connected)

    def stop(self) -> None:
        """Stop reconnecting."""
        if self._reconnector is not None:
            self._reconnector.stopConnecting()
            self._reconnector = None

    @property
    def connected(self) -> bool:
        """Whether the introducer has accepted our version check."""
        return self._rref is not None

    def status(self) -> str:
        """Tahoe's wording for the welcome page."""
        if self._rref is not None and self._hint:
            return f"Connected to {self._hint} via tcp"
        if self.last_error:
            return f"Not connected: {self.last_error}"
        return "Not connected"

    # -- the connection

    def _connected(self, rref: Any) -> None:
        self._hint = rref.getConnectionInfo().winningHint
        rref.notifyOnDisconnect(self._lost)
        d = rref.callRemote("get_version")

        def check(version: Any) -> None:
            try:
                check_introducer_version(version)
            except IntroducerError as error:
                self.last_error = str(error)
                log.msg(f"introducer {self.furl[:40]}…: {error}")
                return
            self.last_error = None
            self._rref = rref
            for signed in self._published.values():
                self._publish(rref, signed)
            for name in sorted(self._subscriptions):
                self._subscribe(rref, name)

        d.addCallback(check)
        d.addErrback(self._failed, "get_version")

    def _lost(self) -> None:
        self._rref = None

    def _failed(self, failure: Any, what: str) -> None:
        self.last_error = f"{what} failed: {failure.value!r}"
        log.msg(f"introducer {what} failed: {failure.value!r}")

    def _publish(self, rref: Any, signed: AnnouncementTuple) -> None:
        d = rref.callRemote("publish_v2", signed, self._canary)
        d.addErrback(self._failed, "publish_v2")

    def _subscribe(self, rref: Any, service_name: str) -> None:
        info = subscriber_info(self._nickname, my_version=self._my_version)
        d = rref.callRemote("subscribe_v2", self, service_name.encode("utf-8"), info)
        d.addErrback(self._failed, "subscribe_v2")

    # -- what the introducer sends us

    def remote_announce_v2(self, announcements: Any) -> None:
        """Verify each announcement on its own; a bad one is logged and skipped."""
        for signed in announcements:
            try:
                verified = verify_announcement(signed)
            except BadAnnouncement as error:
                log.msg(f"ignoring a bad announcement: {error}")
                continue
            if verified.service_name not in self._subscriptions:
                continue
            if self._table.offer(verified):
                self._save_cache()
                self._on_announcement(verified)
        return None

    # -- the cache

    def _save_cache(self) -> None:
        """Keep the announcements for the next start; a cache that cannot be written (the
        disk full) is logged, and the announcement is used all the same."""
        if self._cache_file is None:
            return
        entries = [{"ann": ann.announcement, "key_s": ann.server_id} for ann in self._table]
        try:
            write_atomically(self._cache_file,
                             yaml.safe_dump(entries, default_flow_style=False), mode=0o600)
        except OSError as error:
            log.msg(f"could not save the announcement cache {self._cache_file}: {error}")

    def _load_cache(self) -> None:
        if self._cache_file is None or not self._cache_file.exists():
            return
        try:
            entries = yaml.safe_load(self._cache_file.read_text()) or []
        except (OSError, yaml.YAMLError) as error:
            log.msg(f"ignoring unreadable announcement cache {self._cache_file}: {error}")
            return
        for entry in entries if isinstance(entries, list) else []:
            try:
                cached = VerifiedAnnouncement(dict(entry["ann"]), str(entry["key_s"]), b"", b"")
                if cached.service_name in self._subscriptions:
                    self._on_announcement(cached)
            except (KeyError, TypeError, ValueError) as error:
                log.msg(f"ignoring a malformed cache entry: {error!r}")
