"""The introducer service: accepts signed announcements and relays them to subscribers.

Behaviour of a 1.20 introducer (``reference/storage-protocol.md`` §7.1-7.2):
one announcement per (service name, signing key), identical ones ignored,
replays refused by seqnum, every accepted one relayed to that service's
subscribers as a one-element set, and a new subscriber sent everything held.
"""
from __future__ import annotations

from typing import Any

from foolscap.api import Referenceable
from twisted.python import log
from zope.interface import implementer

from .._version import APPLICATION_VERSION
from .announcement import AnnouncementTable, introducer_version, verify_announcement
from .errors import BadAnnouncement
from .interfaces import RIIntroducerPublisherAndSubscriberService_v2


@implementer(RIIntroducerPublisherAndSubscriberService_v2)
class IntroducerService(Referenceable):  # type: ignore[misc]
    """The object behind ``private/introducer.furl``."""

    def __init__(self) -> None:
        self._table = AnnouncementTable()
        self._subscribers: dict[str, dict[Any, dict]] = {}

    def remote_get_version(self) -> dict:
        """Bytes keys only, including the v2 protocol key."""
        return introducer_version(APPLICATION_VERSION.encode("ascii"))

    def remote_publish_v2(self, announcement: Any, canary: Any) -> None:
        """Check the signature, keep the announcement if it is new, and relay it.

        :raises BadAnnouncement: back to the publisher, for an unsigned or forged one.
        """
        verified = verify_announcement(announcement)
        if not self._table.offer(verified):
            return None
        relayed = {verified.as_tuple()}
        for subscriber in list(self._subscribers.get(verified.service_name, {})):
            d = subscriber.callRemote("announce_v2", relayed)
            d.addErrback(lambda f: log.msg(f"announce_v2 to a subscriber failed: {f.value!r}"))
        return None

    def remote_subscribe_v2(self, subscriber: Any, service_name: bytes,
                            subscriber_info: dict) -> None:
        """Remember ``subscriber`` and send it every announcement held for the service."""
        name = service_name.decode("utf-8", "replace")
        subscribers = self._subscribers.setdefault(name, {})
        if subscriber in subscribers:
            return None
        subscribers[subscriber] = dict(subscriber_info)
        subscriber.notifyOnDisconnect(self._forget, name, subscriber)
        current = {ann.as_tuple() for ann in self._table.for_service(name)}
        if current:
            d = subscriber.callRemote("announce_v2", current)
            d.addErrback(lambda f: log.msg(f"announce_v2 to a new subscriber failed: {f.value!r}"))
        return None

    def _forget(self, name: str, subscriber: Any) -> None:
        self._subscribers.get(name, {}).pop(subscriber, None)

    def summary(self) -> tuple[dict[str, int], dict[str, int]]:
        """(subscribers per service, announcements per service) for the web page."""
        subscriptions = {name: len(subs) for name, subs in self._subscribers.items()}
        announcements: dict[str, int] = {}
        for ann in self._table:
            announcements[ann.service_name] = announcements.get(ann.service_name, 0) + 1
        return subscriptions, announcements


__all__ = ["IntroducerService", "BadAnnouncement"]
