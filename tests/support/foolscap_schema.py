"""Foolscap constraints described as plain JSON values (the vocabulary of
``tests/vectors/storage-foolscap.json`` and ``helper-foolscap.json``).

Standard library only: ``misc/interop/capture-helper-interfaces.py`` imports it
under Tahoe 1.20's Python.
"""
from __future__ import annotations

from typing import Any


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
