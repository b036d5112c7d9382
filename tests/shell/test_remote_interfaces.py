"""Our Foolscap interfaces carry Tahoe 1.20's exact names, argument order and constraints."""
from __future__ import annotations

import pytest
from foolscap.remoteinterface import RemoteInterfaceClass

from tahoe.introducer.interfaces import (RIIntroducerPublisherAndSubscriberService_v2,
                                         RIIntroducerSubscriberClient_v2)
from tahoe.storage.interfaces import RIBucketReader, RIBucketWriter, RIStorageServer
from tests.support.foolscap_schema import describe
from tests.vectors import load

FOOLSCAP = load("storage-foolscap.json")
OURS = {iface.__remote_name__: iface for iface in (
    RIStorageServer, RIBucketWriter, RIBucketReader,
    RIIntroducerPublisherAndSubscriberService_v2, RIIntroducerSubscriberClient_v2)}


def test_names_match() -> None:
    """Every interface name Tahoe uses is one of ours."""
    assert set(FOOLSCAP["remote_interface_names"].values()) == set(OURS)


@pytest.mark.parametrize("name", sorted(FOOLSCAP["method_schemas"]))
def test_method_schemas_match(name: str) -> None:
    """Each method has Tahoe's argument order, argument constraints and response constraint."""
    iface: RemoteInterfaceClass = OURS[name]
    expected = FOOLSCAP["method_schemas"][name]
    assert sorted(iface.names()) == sorted(expected)
    for method, spec in expected.items():
        schema = iface[method]
        assert schema.argumentNames == spec["positional_argument_order"]
        described = {arg: describe(schema.argConstraints[arg]) for arg in schema.argumentNames}
        for arg, want in spec["arguments"].items():
            got = described[arg]
            assert {k: got.get(k) for k in want} == want, (method, arg)
        response = describe(schema.responseConstraint)
        assert {k: response.get(k) for k in spec["response"]} == spec["response"], method
