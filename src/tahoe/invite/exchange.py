"""Both sides of the invite exchange over a magic-wormhole mailbox (shell).

:func:`send_invite` (``tahoe invite``) allocates a code, says it, and sends the
settings once the joiner has introduced itself; :func:`receive_invite`
(``create-client/create-node --join``) uses a code and returns the settings.
The messages come from :mod:`tahoe.invite.messages`; this module only moves
them and turns magic-wormhole's failures into :mod:`tahoe.invite.errors`.
Twisted and magic-wormhole are imported here, so only the commands that
invite or join load them. :func:`run_exchange` runs one exchange to its end
on the global reactor, for a command-line program.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TextIO, TypeVar

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.defer import TimeoutError as DeferredTimeout
from wormhole import create as create_wormhole
from wormhole.errors import (KeyFormatError, LonelyError, ServerConnectionError, ServerError,
                             WelcomeError, WormholeError, WrongPasswordError)

from .errors import (BadInviteCode, InviteError, MailboxUnreachable, NoInviteArrived,
                     WrongInviteCode)
from .messages import (INVITER_ABILITY, JOINER_ABILITY, Invite, check_code, check_hello,
                       encode_invite, hello, parse_invite)

__all__ = ["send_invite", "receive_invite", "run_exchange"]

T = TypeVar("T")


async def send_invite(reactor: Any, mailbox_url: str, app_id: str, invite: Invite,
                      stdout: TextIO, stderr: TextIO) -> None:
    """Allocate a code, print it, and send ``invite`` to whoever joins with it.

    Waits as long as it takes for the joiner (as Tahoe does).

    :raises InviteError: if the mailbox is unreachable, the joiner used a wrong
        code, or its introduction is not a Tahoe joiner's.
    """
    stdout.write(f"Connecting to '{mailbox_url}'...\n")
    stdout.flush()
    wormhole = create_wormhole(app_id, mailbox_url, reactor, stderr=stderr)
    try:
        await _translated(wormhole.get_welcome(), mailbox_url)
        stdout.write("Connected to wormhole server\n")
        wormhole.allocate_code()
        code = await _translated(wormhole.get_code(), mailbox_url)
        stdout.write(f"Invite Code for client: {code}\n")
        stdout.flush()
        wormhole.send_message(hello(INVITER_ABILITY))
        check_hello(await _translated(wormhole.get_message(), mailbox_url), JOINER_ABILITY)
        stdout.write("  received client introduction\n")
        stdout.write("  transmitting configuration\n")
        stdout.flush()
        wormhole.send_message(encode_invite(invite))
    except BaseException:
        await _close_quietly(wormhole)
        raise
    await _translated(wormhole.close(), mailbox_url)


async def receive_invite(reactor: Any, mailbox_url: str, app_id: str, code: str,
                         timeout: float, stdout: TextIO, stderr: TextIO) -> Invite:
    """Join with ``code``: introduce ourselves and return the inviter's checked settings.

    :param timeout: seconds to wait for the inviter's first message; a code
        nobody is inviting with (mistyped number, already used, inviter gone)
        gets no answer at all.
    :raises InviteError: :class:`BadInviteCode`, :class:`MailboxUnreachable`,
        :class:`WrongInviteCode`, :class:`NoInviteArrived`, or
        :class:`~tahoe.invite.errors.BadInviteMessage`.
    """
    check_code(code)
    stdout.write(f"Opening wormhole with code '{code}'\n")
    stdout.write(f"Connecting to '{mailbox_url}'\n")
    stdout.flush()
    wormhole = create_wormhole(app_id, mailbox_url, reactor, stderr=stderr)
    try:
        try:
            wormhole.set_code(code)
        except KeyFormatError as e:
            raise BadInviteCode(f"{code!r} is not an invite code: {e}") from None
        await _translated(wormhole.get_welcome(), mailbox_url)
        stdout.write("Connected to wormhole server\n")
        stdout.flush()
        wormhole.send_message(hello(JOINER_ABILITY))
        first = wormhole.get_message()
        first.addTimeout(timeout, reactor)
        try:
            check_hello(await _translated(first, mailbox_url), INVITER_ABILITY)
        except (CancelledError, DeferredTimeout):
            raise NoInviteArrived(
                f"no invite arrived within {timeout:g} s for the code '{code}': it is"
                " wrong or has expired (a code works once, and only while 'tahoe invite'"
                " waits on the other side)") from None
        stdout.write("  received server introduction\n")
        stdout.flush()
        invite = parse_invite(await _translated(wormhole.get_message(), mailbox_url))
        stdout.write("  received configuration\n")
        stdout.flush()
    finally:
        await _close_quietly(wormhole)
    return invite


async def _translated(d: Deferred[Any], mailbox_url: str) -> Any:
    """Await ``d``, turning magic-wormhole's errors into ours."""
    try:
        return await d
    except ServerConnectionError as e:
        raise MailboxUnreachable(
            f"cannot reach the wormhole mailbox server {mailbox_url}: {e}") from None
    except WelcomeError as e:
        raise MailboxUnreachable(
            f"the wormhole mailbox server {mailbox_url} refused us: {e}") from None
    except WrongPasswordError:
        raise WrongInviteCode("the two sides used different invite codes (key confirmation"
                              " failed); the code is now spent: ask for a new invite") from None
    except ServerError as e:
        raise NoInviteArrived(f"the wormhole mailbox server refused the code: {e} (was it"
                              " already used?)") from None
    except WormholeError as e:
        raise InviteError(f"the wormhole failed: {type(e).__name__}: {e}") from None


async def _close_quietly(wormhole: Any) -> None:
    """Close a wormhole whose exchange did not finish (its own errors are expected then)."""
    try:
        await wormhole.close()
    except (WormholeError, LonelyError, CancelledError):
        pass
    except Exception:  # the wormhole may already be closed by the error that brought us here
        pass


def run_exchange(exchange: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``exchange(reactor)`` on the global reactor until it ends; return its result.

    For a command-line program: starts and stops the reactor once.

    :raises InviteError: what the exchange raised, or "interrupted" on Ctrl-C.
    """
    from twisted.internet import reactor

    outcome: dict[str, Any] = {}

    def finish(result: object) -> None:
        outcome["result"] = result
        if reactor.running:  # type: ignore[attr-defined]
            reactor.stop()  # type: ignore[attr-defined]

    def begin() -> None:
        Deferred.fromCoroutine(exchange(reactor)).addBoth(finish)  # type: ignore[arg-type]

    reactor.callWhenRunning(begin)  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    if "result" not in outcome:
        raise InviteError("interrupted")
    result = outcome["result"]
    if hasattr(result, "raiseException"):
        result.raiseException()
    return result  # type: ignore[no-any-return]
