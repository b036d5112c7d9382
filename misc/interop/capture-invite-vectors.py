"""Capture the invite messages of the real Tahoe-LAFS 1.20.

Run with the Python of the Tahoe 1.20 virtualenv (misc/interop/install-tahoe-1.20.sh),
naming a ``twist`` that has the magic-wormhole-mailbox-server plugin (ours does):

    ~/.cache/tahoe-lafs-py/tahoe-1.20.0/bin/python misc/interop/capture-invite-vectors.py \\
        OUT_DIR .venv/bin/twist

Starts a mailbox server on 127.0.0.1, then:

1. runs Tahoe's ``tahoe invite`` on a client node made by its ``create-client``
   with a known introducer FURL and encoding, and joins with a bare wormhole
   that records the two messages the inviter sends, byte for byte;
2. allocates a code with a bare wormhole, runs Tahoe's ``create-client --join``
   with it, records the hello the joiner sends, answers as Tahoe's inviter does
   (numbers as text) and records the ``[client]shares.*`` lines it wrote.

Writes ``invite-messages.json``.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from twisted.internet.task import react
from twisted.internet.defer import Deferred
from wormhole import create

BIN = os.path.dirname(sys.executable)
TAHOE = os.path.join(BIN, "tahoe")
APP_ID = "tahoe-lafs.org/invite"
FURL = "pb://" + "a" * 32 + "@tcp:127.0.0.1:4321/introducer-swissnum"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("the mailbox server did not start")


async def _tahoe_invites(reactor, url, work):
    node = os.path.join(work, "inviter")
    subprocess.run([TAHOE, "create-client", f"--introducer={FURL}", "--shares-needed=2",
                    "--shares-happy=3", "--shares-total=5", node], check=True,
                   capture_output=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    invite = subprocess.Popen([TAHOE, "-d", node, f"--wormhole-server={url}", "invite",
                               "--shares-happy=4", "vector-nick"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env)
    output = []
    for line in invite.stdout:
        output.append(line)
        if line.startswith("Invite Code for client: "):
            code = line.split(": ", 1)[1].strip()
            break
    else:
        raise SystemExit("tahoe invite printed no code:\n" + "".join(output))
    wormhole = create(APP_ID, url, reactor)
    wormhole.set_code(code)
    await wormhole.get_welcome()
    wormhole.send_message(json.dumps({"abilities": {"client-v1": {}}}).encode())
    hello = await wormhole.get_message()
    settings = await wormhole.get_message()
    await wormhole.close()
    output.append(invite.stdout.read())
    if invite.wait() != 0:
        raise SystemExit("tahoe invite failed:\n" + "".join(output))
    return hello, settings


async def _tahoe_joins(reactor, url, work):
    wormhole = create(APP_ID, url, reactor)
    await wormhole.get_welcome()
    wormhole.allocate_code()
    code = await wormhole.get_code()
    node = os.path.join(work, "joined")
    join = subprocess.Popen([TAHOE, f"--wormhole-server={url}", "create-client", "--join", code,
                             node], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wormhole.send_message(json.dumps({"abilities": {"server-v1": {}}}).encode())
    hello = await wormhole.get_message()
    wormhole.send_message(json.dumps({"shares-needed": "2", "shares-total": "5",
                                      "shares-happy": "3", "nickname": "joined-nick",
                                      "introducer": FURL}).encode())
    await wormhole.close()
    output = join.communicate()[0].decode()
    if join.returncode != 0:
        raise SystemExit("create-client --join failed:\n" + output)
    with open(os.path.join(node, "tahoe.cfg")) as f:
        shares_lines = [line.rstrip("\n") for line in f if line.startswith("shares.")]
    return hello, shares_lines


async def main(reactor, out_dir, twist):
    work = tempfile.mkdtemp(prefix="invite-vectors-")
    port = _free_port()
    mailbox = subprocess.Popen([twist, "wormhole-mailbox", f"--port=tcp:{port}:interface=127.0.0.1",
                                f"--channel-db={os.path.join(work, 'mailbox.sqlite')}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port)
        url = f"ws://127.0.0.1:{port}/v1"
        inviter_hello, settings = await _tahoe_invites(reactor, url, work)
        joiner_hello, shares_lines = await _tahoe_joins(reactor, url, work)
    finally:
        mailbox.terminate()
        mailbox.wait()
    vectors = {
        "comment": "Invite messages of Tahoe-LAFS 1.20 (misc/interop/capture-invite-vectors.py):"
                   " its inviter's hello and settings for 'invite --shares-happy=4 vector-nick'"
                   " on a client with shares 2/3/5 and the introducer below; its joiner's hello;"
                   " the shares lines its joiner wrote for settings with numbers as text.",
        "app_id": APP_ID,
        "introducer": FURL,
        "inviter_hello": inviter_hello.decode("utf-8"),
        "inviter_settings": settings.decode("utf-8"),
        "joiner_hello": joiner_hello.decode("utf-8"),
        "joiner_tahoe_cfg_shares_for_text_numbers": shares_lines,
    }
    with open(os.path.join(out_dir, "invite-messages.json"), "w") as f:
        json.dump(vectors, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    react(lambda reactor: Deferred.fromCoroutine(main(reactor, sys.argv[1], sys.argv[2])))
