"""Capture the upload helper's Foolscap interfaces from the real Tahoe-LAFS 1.20.

Run with the Python of the Tahoe 1.20 virtualenv (misc/interop/install-tahoe-1.20.sh):

    ~/.cache/tahoe-lafs-py/tahoe-1.20.0/bin/python misc/interop/capture-helper-interfaces.py OUT

Writes the remote names, argument order and constraints of ``RIHelper``,
``RICHKUploadHelper`` and ``RIEncryptedUploadable``, and the copy type of the
helper's results, in the vocabulary of ``storage-foolscap.json``
(``tests/shell/test_remote_interfaces.py`` describes constraints the same way).
"""
import json
import os
import sys

from allmydata import interfaces
from allmydata.immutable.upload import HelperUploadResults

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tests.support.foolscap_schema import describe  # noqa: E402 (after the path is set)


def main(out_path):
    schemas = {}
    names = {}
    for iface in (interfaces.RIHelper, interfaces.RICHKUploadHelper,
                  interfaces.RIEncryptedUploadable):
        names[iface.__name__] = iface.__remote_name__
        methods = {}
        for method in sorted(iface.names()):
            schema = iface[method]
            methods[method] = {
                "positional_argument_order": list(schema.argumentNames),
                "arguments": {arg: describe(schema.argConstraints[arg])
                              for arg in schema.argumentNames},
                "response": describe(schema.responseConstraint),
            }
        schemas[iface.__remote_name__] = methods
    vectors = {
        "description": "The upload helper's Foolscap interfaces in Tahoe-LAFS 1.20 "
                       "(allmydata.interfaces), and the copy type of its results.",
        "remote_interface_names": names,
        "method_schemas": schemas,
        "upload_results_copytype": HelperUploadResults.typeToCopy,
        "_generated_by": "misc/interop/capture-helper-interfaces.py",
    }
    with open(out_path, "w") as f:
        json.dump(vectors, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
