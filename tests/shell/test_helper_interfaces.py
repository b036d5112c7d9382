"""Our upload-helper interfaces carry Tahoe 1.20's exact names, argument order and constraints
(``tests/vectors/helper-foolscap.json``, captured from 1.20's ``allmydata.interfaces``)."""
from __future__ import annotations

import pytest
from foolscap.remoteinterface import RemoteInterfaceClass

from tahoe.helper.interfaces import (UPLOAD_RESULTS_TYPE, HelperUploadResults,
                                     RICHKUploadHelper, RIEncryptedUploadable, RIHelper)
from tests.support.foolscap_schema import describe
from tests.vectors import load

VECTORS = load("helper-foolscap.json")
OURS = {iface.__remote_name__: iface
        for iface in (RIHelper, RICHKUploadHelper, RIEncryptedUploadable)}


def test_names_match() -> None:
    """The three remote names, and the results' copy type, are Tahoe's."""
    assert set(VECTORS["remote_interface_names"].values()) == set(OURS)
    assert UPLOAD_RESULTS_TYPE == VECTORS["upload_results_copytype"]
    assert HelperUploadResults.typeToCopy == HelperUploadResults.copytype == UPLOAD_RESULTS_TYPE


@pytest.mark.parametrize("name", sorted(VECTORS["method_schemas"]))
def test_method_schemas_match(name: str) -> None:
    """Each method's argument order and constraints, and its answer's, are exactly Tahoe's."""
    iface: RemoteInterfaceClass = OURS[name]
    expected = VECTORS["method_schemas"][name]
    assert sorted(iface.names()) == sorted(expected)
    for method, spec in expected.items():
        schema = iface[method]
        assert list(schema.argumentNames) == spec["positional_argument_order"], method
        for arg in schema.argumentNames:
            assert describe(schema.argConstraints[arg]) == spec["arguments"][arg], (method, arg)
        assert describe(schema.responseConstraint) == spec["response"], method
