"""Capture Grid Manager vectors from the real Tahoe-LAFS 1.20.

Run with the Python of the Tahoe 1.20 virtualenv (misc/interop/install-tahoe-1.20.sh):

    ~/.cache/tahoe-lafs-py/tahoe-1.20.0/bin/python misc/interop/capture-grid-manager-vectors.py OUT_DIR

Drives Tahoe's own ``grid-manager`` and ``tahoe admin add-grid-manager-cert``
commands as subprocesses, and its ``allmydata.grid_manager`` module for the
certificates whose expiry must be fixed (a past one, and one at a known
moment), then writes ``grid-manager-config.json`` (the manager's config.json,
verbatim), ``grid-manager-certificate.json`` (a certificate file written by
``grid-manager sign``, verbatim) and ``grid-manager-vectors.json`` (the rest).
"""
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone

BIN = os.path.dirname(sys.executable)


def run(*argv, stdin=None, cwd=None):
    result = subprocess.run(argv, input=stdin, capture_output=True, check=True, cwd=cwd)
    return result.stdout.decode("utf-8")


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _announcement(tahoe, work, node):
    """The storage announcement the certified node publishes, as its own client
    caches it (``private/introducer_default_cache.yaml``), with its server id."""
    import time
    import yaml
    introducer = os.path.join(work, "introducer")
    port = _free_port()
    run(tahoe, "create-introducer", f"--port=tcp:{port}:interface=127.0.0.1",
        f"--location=tcp:127.0.0.1:{port}", introducer)
    processes = [subprocess.Popen([tahoe, "run", "--allow-stdin-close", introducer],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)]
    try:
        furl_path = os.path.join(introducer, "private", "introducer.furl")
        deadline = time.monotonic() + 60
        while not os.path.exists(furl_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        furl = open(furl_path).read().strip()
        cfg_path = os.path.join(node, "tahoe.cfg")
        cfg = open(cfg_path).read().replace("[client]\n", f"[client]\nintroducer.furl = {furl}\n", 1)
        open(cfg_path, "w").write(cfg)
        processes.append(subprocess.Popen([tahoe, "run", "--allow-stdin-close", node],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        cache = os.path.join(node, "private", "introducer_default_cache.yaml")
        while time.monotonic() < deadline:
            if os.path.exists(cache):
                entries = yaml.safe_load(open(cache)) or []
                for entry in entries:
                    if "grid-manager-certificates" in entry["ann"]:
                        return {"key_s": entry["key_s"], "ann": entry["ann"]}
            time.sleep(0.5)
        raise RuntimeError("no announcement with certificates was cached")
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(30)


def main(out_dir):
    from allmydata import grid_manager as gm_module
    from allmydata.util import jsonbytes
    from twisted.python.filepath import FilePath

    work = tempfile.mkdtemp()
    config_dir = os.path.join(work, "gm")
    gm = os.path.join(BIN, "grid-manager")
    tahoe = os.path.join(BIN, "tahoe")
    run(gm, "--config", config_dir, "create")
    servers = {}
    for name in ("storage0", "storage1"):
        lines = run(tahoe, "admin", "generate-keypair").splitlines()
        keys = dict(line.split(": ") for line in lines)
        servers[name] = {"private": keys["private"], "public": keys["public"]}
        run(gm, "--config", config_dir, "add", name, keys["public"])
    sign_stdout = run(gm, "--config", config_dir, "sign", "storage0", "365")
    public_identity = run(gm, "--config", config_dir, "public-identity")
    list_stdout = run(gm, "--config", config_dir, "list")
    config_text = open(os.path.join(config_dir, "config.json")).read()
    cert_text = open(os.path.join(config_dir, "storage0.cert.0")).read()
    stdin_config = run(gm, "--config", "-", "add", "storage2",
                       servers["storage0"]["public"], stdin=config_text.encode())

    # Certificates at a fixed moment: Tahoe's sign() with its clock replaced.
    manager = gm_module.load_grid_manager(FilePath(config_dir))
    fixed = []
    for name, now, days in (("storage1", "2024-01-02T03:04:05.678901+00:00", 30),
                            ("storage1", "2020-01-01T00:00:00+00:00", 1)):
        gm_module.current_datetime_with_zone = lambda now=now: datetime.fromisoformat(now)
        cert = manager.sign(name, timedelta(days=days))
        fixed.append({"name": name, "now": now, "expiry_days": days,
                      "certificate": cert.certificate.decode("utf-8"),
                      "file": jsonbytes.dumps(cert.marshal(), indent=4)})

    # add-grid-manager-cert on a storage node directory.
    node = os.path.join(work, "node")
    run(tahoe, "create-node", "--hostname", "127.0.0.1", "--nickname", "n", node)
    # the node is storage0: the certificate is for its own key
    with open(os.path.join(node, "private", "node.privkey"), "w") as f:
        f.write(servers["storage0"]["private"] + "\n")
    cert_path = os.path.join(config_dir, "storage0.cert.0")
    stderr = subprocess.run([tahoe, "-d", node, "admin", "add-grid-manager-cert", "--name", "gm0",
                             "--filename", cert_path], capture_output=True, check=True).stderr
    node_cert = open(os.path.join(node, "gm0.cert")).read()
    cfg = open(os.path.join(node, "tahoe.cfg")).read()
    announcement = _announcement(tahoe, work, node)

    vectors = {
        "comment": "Captured from Tahoe-LAFS 1.20 by misc/interop/capture-grid-manager-vectors.py",
        "public_identity_stdout": public_identity,
        "private_key": json.loads(config_text)["private_key"],
        "servers": servers,
        "sign_stdout": sign_stdout,
        "list_stdout": list_stdout,
        "stdin_add_stdout": stdin_config,
        "fixed_certificates": fixed,
        "announcement": announcement,
        "add_grid_manager_cert": {
            "name": "gm0", "stderr": stderr.decode(), "cert_file": node_cert,
            "tahoe_cfg_sections": [line for line in cfg.splitlines()
                                   if "grid_manag" in line or line.startswith("gm0 =")],
        },
    }
    with open(os.path.join(out_dir, "grid-manager-config.json"), "w") as f:
        f.write(config_text)
    with open(os.path.join(out_dir, "grid-manager-certificate.json"), "w") as f:
        f.write(cert_text)
    with open(os.path.join(out_dir, "grid-manager-vectors.json"), "w") as f:
        json.dump(vectors, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
