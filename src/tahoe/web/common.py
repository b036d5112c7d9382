"""What the gateway's file and directory resources share: their arguments and the error table.

Errors are translated at one boundary, through one table (STYLE.md §8):
:func:`status_for` gives every error of the file and directory layers its
HTTP status and plain-text body (``reference/frontends.md`` §3.10);
:func:`tahoe.web.rendering.render_async` answers with it. The arguments,
async rendering and back-pressure every page shares live in
:mod:`tahoe.web.rendering` (re-exported here), so that the pages a storage
node serves load none of the layers named below.
"""
from __future__ import annotations

from email import message_from_bytes, policy
from typing import Literal, Union

from twisted.web.server import Request

from ..caps.errors import CapError
from ..caps.mutable import MutableFormat
from ..client.errors import NotEnoughSharesError, UploadUnhappinessError
from ..client.uploadable import FileUploadable, Uploadable
from ..dirnode.errors import (BadMetadata, ChildCapError, ChildOfWrongTypeError,
                              CorruptDirectory, DirnodeError, ExistingChildError,
                              MustBeDeepImmutableError, MustBeReadonlyError,
                              MustNotBeUnknownRWError, NoSuchChildError, NotMutableError,
                              NotWriteableError)
from ..immutable.errors import BadEncodingParameters
from ..mutable.errors import NotEnoughShares, UncoordinatedWriteError, UnrecoverableFile
from .rendering import (StreamPausing, WebError, _boolean, arg, boolean_arg, raw_arg, redirect,
                        render_async)

__all__ = [
    "EMPTY_PATH_COMPONENT", "EXISTING_CHILD", "KNOWN_FORMATS", "ChildNotFound", "FileInTheWay",
    "Replace", "StreamPausing", "WebError", "arg", "body_uploadable", "boolean_arg",
    "format_arg", "mkdir_format", "multipart_filename", "raw_arg", "redirect", "render_async",
    "replace_arg", "requested_format", "status_for",
]

#: ``replace=`` as Tahoe reads it: True, False, or only files may be replaced.
Replace = Union[bool, Literal["only-files"]]
EXISTING_CHILD = ("There was already a child by that name, and you asked me to not "
                  "replace it.")
EMPTY_PATH_COMPONENT = ("The webapi does not allow empty pathname components, i.e. a "
                        "double slash")


class ChildNotFound(NoSuchChildError):
    """No child of this name (404 ``No such child: NAME``).

    :ivar child_name: the name as the client gave it.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"no child named {name!r}")
        self.child_name = name


class FileInTheWay(ChildOfWrongTypeError):
    """A directory was to be created (or walked through) where a file is linked (409)."""


KNOWN_FORMATS = ("CHK", "SDMF", "MDMF")


def format_arg(request: Request, default: str | None) -> str | None:
    """``format=`` (upper-cased), else SDMF for ``mutable=true``, else ``default``.

    :raises WebError: 400 ``Unknown format: X, I know CHK, SDMF, MDMF``.
    """
    fmt = arg(request, "format")
    if fmt:
        if fmt.upper() not in KNOWN_FORMATS:
            raise WebError(f"Unknown format: {fmt}, I know CHK, SDMF, MDMF")
        return fmt.upper()
    return "SDMF" if boolean_arg(request, "mutable", False) else default


def requested_format(request: Request) -> str:
    """The format of a new file: ``CHK`` unless ``format=`` or ``mutable=true`` says otherwise."""
    return format_arg(request, "CHK") or "CHK"


def mkdir_format(request: Request) -> MutableFormat | None:
    """The format of a new directory (None: the gateway's default; ``CHK`` is ignored here)."""
    fmt = format_arg(request, None)
    if fmt == "SDMF":
        return MutableFormat.SDMF
    if fmt == "MDMF":
        return MutableFormat.MDMF
    return None


def replace_arg(request: Request, default: str = "true") -> Replace:
    """``replace=``: a boolean or ``only-files`` (case-insensitive).

    :raises WebError: 400 ``invalid replace= argument: 'X'`` for anything else.
    """
    value = arg(request, "replace", default) or ""
    if value.lower() == "only-files":
        return "only-files"
    try:
        return _boolean(value)
    except ValueError:
        raise WebError(f"invalid replace= argument: {value!r}") from None


def multipart_filename(request: Request, field: str) -> str | None:
    """The file name a ``multipart/form-data`` body gives for ``field``, if any."""
    content_type = request.getHeader(b"content-type") or b""
    if not content_type.lower().startswith(b"multipart/form-data"):
        return None
    request.content.seek(0)
    body = request.content.read()
    request.content.seek(0)
    message = message_from_bytes(b"MIME-Version: 1.0\r\nContent-Type: " + content_type
                                 + b"\r\n\r\n" + body, policy=policy.HTTP)
    if not message.is_multipart():
        return None
    for part in message.get_payload():  # type: ignore[union-attr]
        disposition_name = part.get_param("name", header="content-disposition")  # type: ignore
        if disposition_name == field:
            name = part.get_filename()  # type: ignore[union-attr]
            return str(name) if name is not None else None
    return None


def body_uploadable(request: Request) -> Uploadable:
    """The request body as an upload source (Twisted spools large bodies to a file)."""
    content = request.content
    content.seek(0, 2)
    size = content.tell()
    content.seek(0)
    return FileUploadable(content, size)


def _child_name(error: BaseException) -> str:
    name = getattr(error, "name", None)
    return "<unknown name>" if name is None else repr(name)


def _dirnode_status(error: DirnodeError) -> tuple[int, str]:
    """Statuses and messages of directory errors (``reference/frontends.md`` §3.10)."""
    if isinstance(error, NoSuchChildError):
        name = getattr(error, "child_name", None)
        return 404, f"No such child: {name if name is not None else error}"
    if isinstance(error, ExistingChildError):
        return 409, EXISTING_CHILD
    if isinstance(error, FileInTheWay):
        return 409, str(error)
    if isinstance(error, MustNotBeUnknownRWError):
        return 400, (f"MustNotBeUnknownRWError: an operation to add a child named "
                     f"{_child_name(error)} to a directory was given an unknown cap in a "
                     f"write slot; give it in the read slot (ro_uri) instead")
    if isinstance(error, MustBeDeepImmutableError):
        return 400, (f"MustBeDeepImmutableError: the cap given for the child named "
                     f"{_child_name(error)} must be immutable: it is added to an immutable "
                     f"directory, or came from one as an unknown cap")
    if isinstance(error, MustBeReadonlyError):
        return 400, (f"MustBeReadonlyError: the cap given for the child named "
                     f"{_child_name(error)} must be read-only: it is given in a read slot "
                     f"(ro_uri), or came from one as an unknown cap")
    if isinstance(error, (ChildCapError, BadMetadata, ChildOfWrongTypeError, NotMutableError,
                          NotWriteableError)):
        return 400, f"{type(error).__name__}: {error}"
    if isinstance(error, CorruptDirectory):
        return 500, f"CorruptDirectory: {error}"
    return 500, f"Internal error: {type(error).__name__}: {error}"


def status_for(error: BaseException) -> tuple[int, str]:
    """The HTTP status and plain-text message the error table gives an exception."""
    if isinstance(error, WebError):
        return error.status, str(error)
    if isinstance(error, DirnodeError):
        return _dirnode_status(error)
    if isinstance(error, (UnrecoverableFile, NotEnoughShares)):
        return 410, (f"UnrecoverableFileError: the directory (or mutable file) could not be "
                     f"retrieved, because there were not enough good shares ({error}). "
                     f"Servers may be disconnected or shares lost; a filecheck of this "
                     f"object tells more.")
    if isinstance(error, UncoordinatedWriteError):
        return 500, f"UncoordinatedWriteError: {error}"
    if isinstance(error, CapError):
        return 400, f"Invalid capability: {error}"
    if isinstance(error, NotEnoughSharesError):
        return 410, f"{type(error).__name__}: {error}"
    if isinstance(error, UploadUnhappinessError):
        return 500, f"UploadUnhappinessError: {error}"
    if isinstance(error, BadEncodingParameters):
        return 400, str(error)
    return 500, f"Internal error: {type(error).__name__}: {error}"


