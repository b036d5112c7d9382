"""Our Foolscap interfaces carry Tahoe 1.20's exact names, argument order and constraints."""
from __future__ import annotations

from typing import Any

import pytest
from foolscap.remoteinterface import RemoteInterfaceClass

from tahoe.introducer.interfaces import (RIIntroducerPublisherAndSubscriberService_v2,
                                         RIIntroducerSubscriberClient_v2)
from tahoe.storage.interfaces import RIBucketReader, RIBucketWriter, RIStorageServer
from tests.vectors import load

FOOLSCAP = load("storage-foolscap.json")
OURS = {iface.__remote_name__: iface for iface in (
    RIStorageServer, RIBucketWriter, RIBucketReader,
    RIIntroducerPublisherAndSubscriberService_v2, RIIntroducerSubscriberClient_v2)}


def describe(constraint: Any) -> dict:
    """Describe a Foolscap constraint in the vector file's vocabulary."""
    kind = type(constraint).__name__
    out: dict[str, Any] = {"constraint": kind}
    if kind == "ByteStringConstraint":
        out.update(maxLength=constraint.maxLength, minLength=constraint.minLength)
    elif kind == "IntegerConstraint":
        out.update(maxBytes=constraint.maxBytes)
    elif kind in ("SetConstraint", "ListConstraint"):
        out.update(maxLength=constraint.maxLength, element=describe(constraint.constraint))
        if kind == "ListConstraint":
            out.update(minLength=constraint.minLength)
    elif kind == "TupleConstraint":
        out.update(elements=[describe(c) for c in constraint.constraints])
    elif kind == "DictConstraint":
        out.update(maxKeys=constraint.maxKeys, key=describe(constraint.keyConstraint),
                   value=describe(constraint.valueConstraint))
    elif kind == "RemoteInterfaceConstraint":
        iface = constraint.interface
        out.update(interface=iface.__remote_name__ if iface is not None else None)
    elif kind == "PolyConstraint":
        out.update(alternatives=[describe(c) for c in constraint.alternatives])
    return out


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
