"""The SSH session of a logged-in SFTP user: the ``sftp`` subsystem and nothing else.

Two pieces of Twisted Conch, made to take what real clients send:

* :class:`SFTPOnlySession`, the session channel of an
  :class:`~.sftp_server.SFTPUser`. OpenSSH's ``ssh`` and ``sftp`` send
  requests besides the subsystem: ``env`` for every ``SendEnv`` variable
  (Debian's ``ssh_config`` sends ``LANG`` and ``LC_*``), ``pty-req`` and
  ``window-change`` for a terminal, ``shell`` or ``exec``. Conch's session
  asked the user, adapted to ``ISession``, about each of them, and logged an
  unhandled ``TypeError`` ("Could not adapt") since an SFTP user is no shell
  user. Now ``env`` is refused quietly (as OpenSSH's ``sshd`` refuses a
  variable its ``AcceptEnv`` does not name), a terminal is granted and never
  used, and a shell or a command is told on its standard error that only SFTP
  is offered and ends with exit status 1. Requests Conch knows nothing of (``x11-req``, agent
  forwarding) are refused by Conch itself.
* :class:`FileTransferServer`, Conch's SFTP server with two changes. A
  ``WRITE`` request is parsed as OpenSSH's ``sftp-server`` parses it: bytes
  past its data are ignored. rclone 1.60 (the Go ``pkg/sftp`` client before
  1.13.6) sends the last ``WRITE`` of a file whose size is not a multiple of
  its 32 KiB chunk with the data's own length right but the packet as long as
  the whole chunk, the rest being stale bytes of its buffer; Conch asserted on
  them, logged an ``AssertionError`` and answered nothing, and rclone waited
  for the answer for ever. And any request Conch cannot parse is answered
  with ``FX_BAD_MESSAGE`` instead of silence. Files still open for writing
  when the connection is lost are abandoned, not stored (Conch closes them as
  if the client had).
"""
from __future__ import annotations

import struct
from typing import Any, Callable

from twisted.conch.ssh import connection, filetransfer, session
from twisted.conch.ssh.common import getNS
from twisted.internet import defer
from twisted.python import log
from twisted.python.failure import Failure

from .sftp_files import WriteHandle

__all__ = ["FileTransferServer", "SFTPOnlySession", "ONLY_SFTP"]

#: What a shell or command session is told before it ends.
ONLY_SFTP = b"This server offers only SFTP (the sftp subsystem): no shell, no commands.\r\n"


class SFTPOnlySession(session.SSHSession):
    """A session channel of an SFTP user: the ``sftp`` subsystem, and clean refusals.

    Conch's own session asks the user (adapted to ``ISession``) about every request but
    the subsystem; this one answers them itself, so no user ever needs adapting.
    """

    _refused = False

    def request_env(self, data: bytes) -> int:
        """Refused quietly, as ``sshd`` refuses what its ``AcceptEnv`` does not name."""
        return 0

    def request_pty_req(self, data: bytes) -> int:
        """A terminal is granted and never used: the shell it is for is refused with a
        message (``ssh -t`` would end with status 255 and no message, were it refused)."""
        return 1

    def request_window_change(self, data: bytes) -> int:
        """The unused terminal's size."""
        return 1

    def request_shell(self, data: bytes) -> int:
        """Refused: see :meth:`request_exec`."""
        return self._refuse("a shell")

    def request_exec(self, data: bytes) -> int:
        """Refused: the client reads :data:`ONLY_SFTP` on its standard error and gets exit
        status 1, after the request itself is answered (so that the client sees both)."""
        command = getNS(data)[0] if len(data) >= 4 else b""
        return self._refuse(f"the command {command[:200]!r}")

    def _refuse(self, what: str) -> int:
        if self.client is not None or self._refused:  # the channel already has a use
            return 0
        log.msg(f"SFTP: {what} was asked for and refused (only SFTP is offered)")
        self._refused = True
        self.avatar.clock.callLater(0, self._end_refused)
        return 1

    def eofReceived(self) -> None:  # noqa: N802 (Conch)
        """The client is done with the subsystem: it ended well (exit status 0, as
        ``sshd`` reports when ``sftp-server`` exits). Conch closed the channel with no
        status, and ``ssh`` then exits with 255: restic's ``Close`` failed on it."""
        if self.client is not None and not self.closing:
            self.conn.sendRequest(self, b"exit-status", struct.pack(">L", 0))
        super().eofReceived()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Conch)
        """What a refused shell is sent is dropped (Conch would keep it for a client that
        never comes, in the buffer it also sends from, and never close the channel)."""
        if not self._refused:
            super().dataReceived(data)

    def _end_refused(self) -> None:
        if self.closing:
            return
        self.writeExtended(connection.EXTENDED_DATA_STDERR, ONLY_SFTP)
        self.conn.sendRequest(self, b"exit-status", struct.pack(">L", 1))
        self.loseConnection()


def _answering_malformed(kind: str) -> Callable[..., None]:
    """Conch's handler of ``kind`` requests, answering ``FX_BAD_MESSAGE`` when it cannot
    parse one (Conch logs the exception and answers nothing: the client waits for ever)."""
    parse = getattr(filetransfer.FileTransferServer, f"packet_{kind}")

    def handler(self: "FileTransferServer", data: bytes, *more: Any) -> None:
        try:
            parse(self, data, *more)
        except Exception as error:  # every handler parses the whole packet before it acts
            self.refuse_malformed(kind, data, error)
    handler.__name__ = f"packet_{kind}"
    return handler


class FileTransferServer(filetransfer.FileTransferServer):
    """Conch's SFTP server taking rclone's ``WRITE`` requests, answering the requests it
    cannot parse, and abandoning files still being written when the connection is lost."""

    def refuse_malformed(self, kind: str, data: bytes, error: Exception) -> None:
        """Answer a request that cannot be parsed with ``FX_BAD_MESSAGE``."""
        log.msg(f"SFTP: a malformed {kind} request ({len(data)} bytes) was refused:"
                f" {type(error).__name__}")
        if len(data) >= 4:
            self._sendStatus(data[:4], filetransfer.FX_BAD_MESSAGE,
                             f"malformed {kind} request".encode("ascii"))

    def packet_WRITE(self, data: bytes) -> None:  # noqa: N802 (Conch)
        """``id``, ``handle``, ``offset``, ``data``; anything after the data is ignored."""
        try:
            request_id = data[:4]
            handle, rest = getNS(data[4:])
            (offset,) = struct.unpack("!Q", rest[:8])
            (length,) = struct.unpack("!L", rest[8:12])
            chunk = rest[12:12 + length]
            if len(request_id) < 4 or len(chunk) < length:
                raise ValueError("the packet ends inside its data")
        except (struct.error, ValueError) as error:
            self.refuse_malformed("WRITE", data, error)
            return
        handle_object = self.openFiles.get(handle)
        if handle_object is None:
            self._sendStatus(request_id, filetransfer.FX_FAILURE, b"no such open file")
            return
        answer = defer.maybeDeferred(handle_object.writeChunk, offset, chunk)
        answer.addCallback(self._cbStatus, request_id, b"write succeeded")
        answer.addErrback(self._ebStatus, request_id, b"write failed")

    def connectionLost(self, reason: Failure) -> None:  # noqa: N802 (Twisted)
        for handle in list(self.openFiles.values()):
            if isinstance(handle, WriteHandle):
                handle.abandon()
                self.client.forget(handle)
        super().connectionLost(reason)


for _kind in ("OPEN", "CLOSE", "READ", "REMOVE", "RENAME", "MKDIR", "RMDIR", "OPENDIR",
              "READDIR", "STAT", "LSTAT", "FSTAT", "SETSTAT", "FSETSTAT", "READLINK", "SYMLINK",
              "REALPATH", "EXTENDED"):
    setattr(FileTransferServer, f"packet_{_kind}", _answering_malformed(_kind))
del _kind

