"""The Foolscap surface of the upload helper, named as Tahoe-LAFS 1.20 names it.

``docs/formats/helper.md`` describes the exchange. As with the storage
interfaces, the remote names and the positional order of the arguments are
the protocol; a process may register each name once, so never import Tahoe's
own ``allmydata`` in the same process.
"""
from __future__ import annotations

from typing import Any

from foolscap.api import Any as AnyConstraint
from foolscap.api import ChoiceOf, Copyable, DictOf, ListOf, RemoteCopy, RemoteInterface
from foolscap.schema import ByteStringConstraint

from ..storage.interfaces import Offset, ReadSize, StorageIndex

#: The results a helper sends back are a copyable object, not constrained.
UploadResults = AnyConstraint()


class RIEncryptedUploadable(RemoteInterface):
    """The client's side: the helper pulls the ciphertext from it."""

    __remote_name__ = "RIEncryptedUploadable.tahoe.allmydata.com"

    def get_size():  # type: ignore[no-untyped-def]
        return Offset

    def get_all_encoding_parameters():  # type: ignore[no-untyped-def]
        return (int, int, int, int)

    def read_encrypted(offset=Offset, length=ReadSize):  # type: ignore[no-untyped-def]
        return ListOf(ByteStringConstraint(None))

    def close():  # type: ignore[no-untyped-def]
        return None


class RICHKUploadHelper(RemoteInterface):
    """One upload in progress on the helper (its remote name says ``RIUploadHelper``)."""

    __remote_name__ = "RIUploadHelper.tahoe.allmydata.com"

    def get_version():  # type: ignore[no-untyped-def]
        return DictOf(bytes, AnyConstraint())

    def upload(reader=RIEncryptedUploadable):  # type: ignore[no-untyped-def]
        return UploadResults


class RIHelper(RemoteInterface):
    """The helper service published at ``private/helper.furl``."""

    __remote_name__ = "RIHelper.tahoe.allmydata.com"

    def get_version():  # type: ignore[no-untyped-def]
        return DictOf(bytes, AnyConstraint())

    def upload_chk(si=StorageIndex):  # type: ignore[no-untyped-def]
        return (UploadResults, ChoiceOf(RICHKUploadHelper, None))


#: The copy type of the helper's results (an old name Tahoe keeps for compatibility).
UPLOAD_RESULTS_TYPE = "allmydata.upload.UploadResults.tahoe.allmydata.com"


class HelperUploadResults(Copyable, RemoteCopy):  # type: ignore[misc]
    """The helper's answer, sent by value: its attribute dictionary is the state.

    Attributes (all present when we send it, as Tahoe's constructor sets them):
    ``timings`` (name -> seconds), ``sharemap`` (share number -> set of server
    ids), ``servermap`` (server id -> set of share numbers), ``file_size``,
    ``ciphertext_fetched``, ``uri`` (None), ``preexisting_shares``,
    ``pushed_shares``, ``uri_extension_hash`` (32 bytes),
    ``uri_extension_data`` (the UEB's fields, str keys, integers converted)
    and, after an upload, ``verifycapstr``. A received copy may lack some.
    """

    typeToCopy = UPLOAD_RESULTS_TYPE
    copytype = UPLOAD_RESULTS_TYPE

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.sharemap: dict[int, set[bytes]] = {}
        self.servermap: dict[bytes, set[int]] = {}
        self.file_size: int | None = None
        self.ciphertext_fetched: int | None = None
        self.uri: Any = None
        self.preexisting_shares: int | None = None
        self.pushed_shares: int | None = None
        self.uri_extension_hash: bytes | None = None
        self.uri_extension_data: dict[str, Any] = {}
