"""The introducer's Foolscap remote interfaces, as Tahoe-LAFS 1.20 names them.

Facts: ``reference/storage-protocol.md`` §7.1. The subscriber's interface
name is checked by Tahoe's introducer, so it must be exact.
"""
from __future__ import annotations

from foolscap.api import Any, DictOf, Referenceable, RemoteInterface, SetOf


class RIIntroducerSubscriberClient_v2(RemoteInterface):  # noqa: N801 (protocol name)
    """Implemented by every subscribing node; the introducer pushes announcements here."""

    __remote_name__ = "RIIntroducerSubscriberClient_v2.tahoe.allmydata.com"

    def announce_v2(announcements=SetOf(Any(), maxLength=None)):  # type: ignore[no-untyped-def]
        return None


class RIIntroducerPublisherAndSubscriberService_v2(RemoteInterface):  # noqa: N801
    """The object behind ``introducer.furl``."""

    __remote_name__ = "RIIntroducerPublisherAndSubscriberService_v2.tahoe.allmydata.com"

    def get_version():  # type: ignore[no-untyped-def]
        return DictOf(bytes, Any(), maxKeys=None)

    def publish_v2(announcement=Any(), canary=Referenceable):  # type: ignore[no-untyped-def]
        return None

    def subscribe_v2(subscriber=RIIntroducerSubscriberClient_v2,  # type: ignore[no-untyped-def]
                     service_name=bytes, subscriber_info=DictOf(bytes, Any(), maxKeys=None)):
        return None
