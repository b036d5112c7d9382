"""The convergent key of a multipart upload, hashed while its parts arrive.

A CHK upload needs its convergent key (a hash of the whole plaintext) before
it can encrypt anything, so Complete would read every part once for the key
and once more to encode it. :class:`KeyAhead` hashes parts 1, 2, 3, ... (from
their staged files, in a worker thread) as soon as each is stored and all
before it were hashed, while the client still sends the others, and keeps
the key after each one. At Complete, when the list is parts 1 to n exactly as
hashed, the key after part n goes with the source
(:class:`~tahoe.immutable.keys.KnownKey`) and the upload encodes at once.

The hash is for the segment size of a large file (S3 gives the object's size
only at Complete); a file whose geometry differs (a single small part, or
another maximum segment size) has its key computed at Complete, as does any
upload this cannot vouch for: a part stored again after it was hashed (or
while it was), a part file that could not be read, a gateway restarted.
State is in memory only.
"""
from __future__ import annotations

from collections.abc import Callable

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from twisted.python import log

from ..immutable.keys import ConvergentKeyHasher, KnownKey

__all__ = ["KeyAhead", "LARGE_FILE"]

#: The size whose geometry the parts are hashed for: any file at least as large as
#: the maximum segment size has that segment size.
LARGE_FILE = 1 << 40
_READ_BLOCK = 1024 * 1024


class KeyAhead:
    """The running key of one upload's parts in order.

    :param hasher: a fresh hasher for a :data:`LARGE_FILE`'s geometry.
    :param path_of: where part ``n``'s bytes are staged.
    """

    def __init__(self, hasher: ConvergentKeyHasher, path_of: Callable[[int], str]) -> None:
        self._hasher = hasher
        self._path_of = path_of
        #: (size, MD5, the key after it) of parts 1..m as hashed.
        self._hashed: list[tuple[int, str, KnownKey]] = []
        #: Part number -> (size, MD5), for parts stored and not being stored again.
        self._stored: dict[int, tuple[int, str]] = {}
        self._storing: set[int] = set()
        self._hashing: int | None = None
        self._waiters: list[Deferred] = []
        #: Whether a part changed under the hash: no key is given then.
        self.broken = False

    def storing(self, number: int) -> None:
        """Part ``number`` is about to be written (again)."""
        self._storing.add(number)
        self._stored.pop(number, None)
        if number <= len(self._hashed) or number == self._hashing:
            self.broken = True

    def stored(self, number: int, size: int, md5: str) -> None:
        """Part ``number`` was written: hash it if its turn came."""
        self._storing.discard(number)
        self._stored[number] = (size, md5)
        if self._hashing is None:
            Deferred.fromCoroutine(self._run())

    def not_stored(self, number: int) -> None:
        """Writing part ``number`` failed (what is on disk for it is unknown)."""
        self._storing.discard(number)

    async def _run(self) -> None:
        while not self.broken:
            number = len(self._hashed) + 1
            entry = self._stored.get(number)
            if entry is None or number in self._storing:
                break
            self._hashing = number
            try:
                await deferToThread(self._hash_part, self._path_of(number), entry[0])
            except Exception as error:  # the key is made at Complete instead
                log.msg(f"s3 multipart: part {number} not hashed ahead: {error!r}")
                self.broken = True
            finally:
                self._hashing = None
            if self.broken:
                break
            self._hashed.append((*entry, self._hasher.known()))
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def _hash_part(self, path: str, size: int) -> None:
        left = size
        with open(path, "rb") as f:
            while left > 0:
                block = f.read(min(_READ_BLOCK, left))
                if not block:
                    raise OSError(f"{path} is shorter than its {size} bytes")
                self._hasher.update(block)
                left -= len(block)
            if f.read(1):
                raise OSError(f"{path} is longer than its {size} bytes")

    async def key_for(self, numbers: list[int], sizes: list[int], md5s: list[str]
                      ) -> KnownKey | None:
        """The key of the concatenation of parts ``numbers`` (with these sizes and MD5s),
        once the parts stored before are hashed; None unless they are parts 1 to n
        exactly as hashed."""
        if self._hashing is not None:
            waiter: Deferred = Deferred()
            self._waiters.append(waiter)
            await waiter
        n = len(numbers)
        if self.broken or numbers != list(range(1, n + 1)) or n > len(self._hashed) \
                or [(size, md5) for size, md5, _ in self._hashed[:n]] != list(zip(sizes, md5s)):
            return None
        return self._hashed[n - 1][2]
