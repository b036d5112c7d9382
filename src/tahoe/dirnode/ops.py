"""Directory operations as pure functions on a child table (``reference/mutable-dirnodes.md`` §10).

Each function takes the table unpacked from the current contents and
returns a new table (the input is not changed); the shell packs it and
publishes it as the next version. They are idempotent in Tahoe's sense: run
again on contents that already include the change, they give the same
result (a delete then reports that nothing is left to do).

See ``docs/formats/dirnodes.md``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Union

from .children import ChildNode, readonly_child
from .errors import BadMetadata, ChildOfWrongTypeError, ExistingChildError, NoSuchChildError
from .metadata import is_no_write, update_metadata
from .packing import Entry, normalize_name

#: True: replace any child; False: never replace; "only-files": refuse to replace a directory.
Overwrite = Union[bool, Literal["only-files"]]
Children = dict[str, Entry]


def get_child(children: Mapping[str, Entry], name: str) -> Entry:
    """The entry of ``name`` (NFC-normalized before lookup).

    :raises NoSuchChildError: if there is none.
    """
    entry = children.get(normalize_name(name))
    if entry is None:
        raise NoSuchChildError(f"no child named {name!r}")
    return entry


def _check_metadata(name: str, metadata: Mapping[str, Any] | None) -> None:
    if metadata is not None and not isinstance(metadata, Mapping):
        raise BadMetadata(f"metadata of {name!r} must be a JSON object")


def set_children(children: Mapping[str, Entry],
                 entries: Mapping[str, tuple[ChildNode, Mapping[str, Any] | None]], *,
                 now: float, overwrite: Overwrite = True) -> Children:
    """Add or replace several links at once (Tahoe's ``set_children``/``set_uri``/``set_node``).

    :param entries: name -> (child, caller metadata or None).
    :param now: the current time, float seconds since the epoch.
    :raises ExistingChildError: when a name exists and ``overwrite`` forbids
        replacing it (False, or "only-files" and the old child is a directory).
    :raises ChildCapError: when a child's caps are unusable.
    """
    table = dict(children)
    for given_name, (child, metadata) in entries.items():
        name = normalize_name(given_name)
        child.raise_error()
        _check_metadata(name, metadata)
        old = None
        if name in table:
            if not overwrite:
                raise ExistingChildError(f"child {name!r} already exists")
            if overwrite == "only-files" and table[name].child.is_directory:
                raise ExistingChildError(f"child {name!r} already exists as a directory")
            old = table[name].metadata
        merged = update_metadata(old, metadata, now)
        if is_no_write(merged):
            child = readonly_child(child, name)
        table[name] = Entry(child, merged)
    return table


def add_child(children: Mapping[str, Entry], name: str, child: ChildNode,
              metadata: Mapping[str, Any] | None = None, *, now: float,
              overwrite: Overwrite = True) -> Children:
    """Add or replace one link (see :func:`set_children`)."""
    return set_children(children, {name: (child, metadata)}, now=now, overwrite=overwrite)


def delete_child(children: Mapping[str, Entry], name: str, *, must_exist: bool = True,
                 first_time: bool = True, must_be_directory: bool = False,
                 must_be_file: bool = False) -> tuple[Children | None, Entry | None]:
    """Remove a link.

    :param first_time: False on a retry after an uncoordinated write, when a
        missing name means the delete already happened.
    :returns: (new table, removed entry), or (None, None) when the name is
        absent and that is acceptable (nothing to change).
    :raises NoSuchChildError: when the name is absent on the first attempt and must exist.
    :raises ChildOfWrongTypeError: when the child is not of the required
        kind (unknown children may always be deleted).
    """
    name = normalize_name(name)
    old = children.get(name)
    if old is None:
        if first_time and must_exist:
            raise NoSuchChildError(f"no child named {name!r}")
        return None, None
    if must_be_directory and old.child.is_file:
        raise ChildOfWrongTypeError("delete required a directory, not a file")
    if must_be_file and old.child.is_directory:
        raise ChildOfWrongTypeError("delete required a file, not a directory")
    table = dict(children)
    del table[name]
    return table, old


def set_metadata(children: Mapping[str, Entry], name: str, metadata: Mapping[str, Any], *,
                 now: float) -> Children:
    """Replace a link's metadata (the ``tahoe`` object is kept, ``linkmotime`` set to ``now``).

    :raises NoSuchChildError: if the name is absent.
    """
    name = normalize_name(name)
    if name not in children:
        raise NoSuchChildError(f"no child named {name!r}")
    _check_metadata(name, metadata)
    entry = children[name]
    merged = update_metadata(entry.metadata, metadata, now)
    child = readonly_child(entry.child, name) if is_no_write(merged) else entry.child
    table = dict(children)
    table[name] = Entry(child, merged)
    return table


def rename_child(children: Mapping[str, Entry], old_name: str, new_name: str, *, now: float,
                 overwrite: Overwrite = True) -> Children:
    """Move a link to a new name in the same directory.

    As Tahoe's ``move_child_to``: the link is added under the new name with
    the old metadata given as caller metadata (so it gets fresh link times),
    then the old name is removed; here both happen in one table. Renaming
    a name to itself changes nothing (not even a check that it exists, as in
    Tahoe). Across directories, the shell does
    :func:`get_child` here, :func:`add_child` there, :func:`delete_child` here.

    :raises NoSuchChildError: if ``old_name`` is absent.
    :raises ExistingChildError: as :func:`add_child`.
    """
    old_name = normalize_name(old_name)
    new_name = normalize_name(new_name)
    if old_name == new_name:
        return dict(children)
    entry = get_child(children, old_name)
    table = add_child(children, new_name, entry.child, entry.metadata, now=now,
                      overwrite=overwrite)
    del table[old_name]
    return table
