"""The Foolscap remote interfaces of the storage service, exactly as Tahoe-LAFS 1.20 names them.

Names and argument constraints follow ``reference/storage-protocol.md`` §1.5,
§2 and §3 (and ``vectors/storage-foolscap.json``). Tahoe clients send
positional arguments in the order declared here, so the order is part of the
protocol. A process may register each name once: never import Tahoe's own
``allmydata`` package in the same process.
"""
from __future__ import annotations

from foolscap.api import (Any, ChoiceOf, DictOf, IntegerConstraint, ListOf, Referenceable,
                          RemoteInterface, SetOf, TupleOf)
from foolscap.schema import ByteStringConstraint

StorageIndex = ByteStringConstraint(16)
LeaseSecret = ByteStringConstraint(32, 32)
Offset = IntegerConstraint(8)
ReadSize = int
ShareData = ByteStringConstraint(None)
ShareNumbers = SetOf(int, maxLength=256)
TestVector = ListOf(TupleOf(Offset, ReadSize, bytes, bytes), maxLength=None)
DataVector = ListOf(TupleOf(Offset, ShareData), maxLength=None)
ReadVector = ListOf(TupleOf(Offset, ReadSize), maxLength=None)
ReadData = ListOf(ShareData, maxLength=None)
TestAndWriteVectorsForShares = DictOf(int, TupleOf(TestVector, DataVector, ChoiceOf(None, Offset)),
                                      maxKeys=None)


class RIBucketWriter(RemoteInterface):
    """Writes one immutable share; ``close`` makes it visible, ``abort`` discards it."""

    __remote_name__ = "RIBucketWriter"

    def write(offset=Offset, data=ShareData):  # type: ignore[no-untyped-def]
        return None

    def close():  # type: ignore[no-untyped-def]
        return None

    def abort():  # type: ignore[no-untyped-def]
        return None


class RIBucketReader(RemoteInterface):
    """Reads one finished immutable share."""

    __remote_name__ = "RIBucketReader"

    def read(offset=Offset, length=ReadSize):  # type: ignore[no-untyped-def]
        return ShareData

    def advise_corrupt_share(reason=bytes):  # type: ignore[no-untyped-def]
        return None


class RIStorageServer(RemoteInterface):
    """The anonymous storage service published as ``anonymous-storage-FURL``."""

    __remote_name__ = "RIStorageServer.tahoe.allmydata.com"

    def get_version():  # type: ignore[no-untyped-def]
        return DictOf(bytes, Any(), maxKeys=None)

    def allocate_buckets(storage_index=StorageIndex, renew_secret=LeaseSecret,  # type: ignore[no-untyped-def]
                         cancel_secret=LeaseSecret, sharenums=ShareNumbers,
                         allocated_size=Offset, canary=Referenceable):
        return TupleOf(SetOf(int, maxLength=256), DictOf(int, RIBucketWriter, maxKeys=256))

    def add_lease(storage_index=StorageIndex, renew_secret=LeaseSecret,  # type: ignore[no-untyped-def]
                  cancel_secret=LeaseSecret):
        return Any()

    def get_buckets(storage_index=StorageIndex):  # type: ignore[no-untyped-def]
        return DictOf(int, RIBucketReader, maxKeys=256)

    def slot_readv(storage_index=StorageIndex, shares=ListOf(int, maxLength=None),  # type: ignore[no-untyped-def]
                   readv=ReadVector):
        return DictOf(int, ReadData, maxKeys=None)

    def slot_testv_and_readv_and_writev(  # type: ignore[no-untyped-def]
            storage_index=StorageIndex,
            secrets=TupleOf(LeaseSecret, LeaseSecret, LeaseSecret),
            tw_vectors=TestAndWriteVectorsForShares,
            r_vector=ReadVector):
        return TupleOf(bool, DictOf(int, ReadData, maxKeys=None))

    def advise_corrupt_share(share_type=bytes, storage_index=StorageIndex,  # type: ignore[no-untyped-def]
                             shnum=int, reason=bytes):
        return None
