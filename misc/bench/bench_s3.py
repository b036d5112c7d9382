"""The S3 gateway's benchmark (``make bench-s3``): what the S3 layer costs beside the web API.

A local grid of ours (``tahoe grid start``: 10 storage nodes, 3-of-10, happy
7) whose client runs the S3 gateway (an account made by ``tahoe s3
add-account``), and these workloads (issue 28):

* ``small``: 1 kB PutObject and GetObject with boto3, each beside the web
  API's PUT and GET of a file of the same size into/from a directory
  (``/uri/DIRCAP/NAME``, one kept-alive connection), alternating one by
  one, S3 first in every other pair; medians and the ratio S3 / web API
  (target: at most 1.3);
* ``large``: a 100 MB upload by ``aws s3 cp`` (multipart, its default 8 MB
  parts and 10 threads), and by boto3's ``upload_file`` in this process (the
  same parts, without the CLI's start-up, also timed alone), beside a web
  API PUT of the same size (a new file each time); MB/s and the ratio S3 /
  web API (target: at least 0.9);
* ``list``: 10,000 keys in one prefix (made with 32 PutObjects at a time,
  timed too), then ListObjectsV2 of all of them in pages of 1,000 with
  boto3 (target: at most 1 s), and the same pages over plain HTTP without
  parsing their XML (the gateway's part of it);
* ``restic``: ``restic backup`` of a tree of 2,000 files, 200 MB, into an S3
  repository; seconds, and CPU seconds per MB (restic's own, and the grid's
  processes', from ``/proc``).

With a SeaweedFS binary (``weed``, or ``--weed PATH``) the same S3 workloads
run against ``weed server -s3`` on 127.0.0.1 (one process: master, volume
server, filer and S3; one copy of each object, no encryption) as a reference
for an S3 server without client-side encryption or erasure coding; without
one, its column says so. ``go install ...weed@latest`` refuses the module
(its go.mod has replace directives), so it is built from the module's source,
outside the repository, in about 6 minutes on 2 cores::

    cd ~/.cache/seaweedfs && go mod download -json github.com/seaweedfs/seaweedfs@latest
    cp -r "$(go env GOMODCACHE)"/github.com/seaweedfs/seaweedfs@v0.0.0-* src && chmod -R u+w src
    cd src && go build -o ~/.cache/seaweedfs/bin/weed ./weed Not a test: targets are reported, not
asserted. Prints a table and writes every timing to ``--json``. Usage::

    python misc/bench/bench_s3.py [--smoke] [--sections small,large,list,restic]
                                  [--json bench-s3.json] [--weed PATH | --no-weed]
                                  [--workdir DIR]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import random
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (str(HERE), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_proc import cpu_seconds  # noqa: E402
from bench_stats import summarize  # noqa: E402

__all__ = ["main"]

OURS = Path(sys.prefix) / "bin" / "tahoe"
AWS = Path(sys.prefix) / "bin" / "aws"
DEFAULT_WEED = Path.home() / ".cache" / "seaweedfs" / "bin" / "weed"
SECTIONS = ("small", "large", "list", "restic")
TARGETS = {"small_put_ratio": 1.3, "small_get_ratio": 1.3, "large_ratio": 0.9,
           "list_seconds": 1.0}
BUCKET = "bench"
MB = 1_000_000


@dataclass(frozen=True)
class Plan:
    """Sizes and counts of one run."""

    small_ops: int = 200
    small_size: int = 1000
    large_size: int = 100 * MB
    large_runs: int = 3
    list_keys: int = 10_000
    list_runs: int = 5
    restic_files: int = 2000
    restic_file_size: int = 100_000
    storage_nodes: int = 10

    @classmethod
    def smoke(cls) -> "Plan":
        """A tiny plan that checks the harness in a minute."""
        return cls(small_ops=10, large_size=12 * MB, large_runs=1, list_keys=300,
                   list_runs=1, restic_files=50, restic_file_size=20_000, storage_nodes=3)


def log(message: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"[bench-s3 {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _env(home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
           and not k.startswith(("AWS_", "RESTIC_"))}
    if home is not None:
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    return env


def run(argv: Sequence[str | Path], env: dict[str, str] | None = None,
        timeout: float = 3600.0) -> str:
    """Run a command to completion; its stdout; raise unless it exits 0."""
    result = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, env=env or _env(), timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv[:4]))} exited {result.returncode}:\n"
                           f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result.stdout


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (and its +10000 too, which SeaweedFS's gRPC uses)."""
    while True:
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port + 10000 > 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return int(port)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate`` until true, with a deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


@dataclass
class Target:
    """An S3 endpoint with its keys, the processes whose CPU counts as the server's, and
    (ours only) the web API with a directory to PUT into."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    pids: list[int]
    region: str = "us-east-1"
    web_url: str | None = None
    web_dir: str | None = None
    results: dict[str, Any] = field(default_factory=dict)

    def client(self) -> Any:
        """A boto3 client, path-style, never retrying."""
        import boto3
        from botocore.config import Config
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name=self.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          max_pool_connections=64, read_timeout=600))

    def server_cpu(self) -> float:
        """CPU seconds used so far by the server's processes."""
        return sum(cpu_seconds(pid) or 0.0 for pid in self.pids)

    def aws_env(self, home: Path) -> dict[str, str]:
        """The aws CLI's environment: its files in ``home``, this endpoint's keys."""
        home.mkdir(parents=True, exist_ok=True)
        (home / "aws-config").write_text(f"[default]\nregion = {self.region}\n"
                                         "s3 =\n    addressing_style = path\n")
        env = _env(home)
        env.update(AWS_CONFIG_FILE=str(home / "aws-config"),
                   AWS_SHARED_CREDENTIALS_FILE=str(home / "none"),
                   AWS_ACCESS_KEY_ID=self.access_key, AWS_SECRET_ACCESS_KEY=self.secret_key)
        return env


# ---------------------------------------------------------------- the systems


@contextmanager
def our_gateway(workdir: Path, plan: Plan) -> Iterator[Target]:
    """A local grid of ours with the S3 gateway on its client and one account."""
    sys.path.insert(0, str(ROOT))
    from tests.support.nodes import edit_tahoe_cfg
    grid = workdir / "grid"
    log(f"starting a grid of {plan.storage_nodes} storage nodes in {grid}")
    run([OURS, "grid", "start", grid, "--storage-nodes", str(plan.storage_nodes)], timeout=300)
    try:
        client = grid / "client"
        run([OURS, "-d", client, "s3", "add-account"], timeout=120)
        accounts = (client / "private" / "s3-accounts").read_text().split("\n")
        access_key, secret_key, _root = [line for line in accounts
                                         if line.strip() and not line.startswith("#")][-1].split()
        port = free_port()
        edit_tahoe_cfg(client, {"s3": {"enabled": "true",
                                       "port": f"tcp:{port}:interface=127.0.0.1"}})
        (client / "s3.url").unlink(missing_ok=True)
        run([OURS, "grid", "restart", grid, "client"], timeout=300)
        wait_for(lambda: (client / "s3.url").exists(), 120, "s3.url")
        web_url = (client / "node.url").read_text().strip()
        web_dir = http_request(web_url, "POST", "/uri?t=mkdir")[1].decode().strip()
        grid_file = json.loads((grid / "grid.json").read_text())
        pids = [entry["pid"] for entry in grid_file.get("nodes", []) if entry.get("pid")]
        yield Target("ours", (client / "s3.url").read_text().strip().rstrip("/"), access_key,
                     secret_key, pids, web_url=web_url.rstrip("/"), web_dir=web_dir)
    finally:
        run([OURS, "grid", "stop", grid], timeout=300)


@contextmanager
def seaweedfs(weed: Path, workdir: Path) -> Iterator[Target]:
    """``weed server -s3`` on 127.0.0.1 (master, volume, filer and S3 in one process) with
    one identity."""
    data = workdir / "seaweedfs"
    data.mkdir(parents=True, exist_ok=True)
    access_key, secret_key = "WEEDBENCHACCESSKEY01", "weed-bench-secret-key-0000000000000000"
    config = data / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "bench", "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
        "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}))
    ports = {name: free_port() for name in ("master", "volume", "filer", "s3")}
    argv = [str(weed), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={ports['master']}", f"-volume.port={ports['volume']}",
            f"-filer.port={ports['filer']}", "-filer", "-s3", f"-s3.port={ports['s3']}",
            f"-s3.config={config}", "-volume.max=0", "-master.volumeSizeLimitMB=1024"]
    log(f"starting SeaweedFS: {' '.join(argv[:2])} ... -s3.port={ports['s3']}")
    with open(data / "weed.log", "wb") as output:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, env=_env())
    target = Target("seaweedfs", f"http://127.0.0.1:{ports['s3']}", access_key, secret_key,
                    [process.pid])
    try:
        s3 = target.client()

        def answers() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"weed exited {process.returncode}; see {data / 'weed.log'}")
            try:
                s3.list_buckets()
                return True
            except Exception:  # noqa: BLE001 - not up yet
                return False
        wait_for(answers, 120, "SeaweedFS's S3 endpoint")
        yield target
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


# ---------------------------------------------------------------- web API calls


def http_request(base: str, method: str, path: str, body: bytes | None = None,
                 connection: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    """One request on ``connection`` (kept alive) or a new one; (status, body)."""
    own = connection is None
    if connection is None:
        split = urllib.parse.urlsplit(base)
        connection = http.client.HTTPConnection(split.hostname, split.port, timeout=600)
    try:
        connection.request(method, path, body=body)
        answer = connection.getresponse()
        data = answer.read()
        if answer.status >= 300:
            raise RuntimeError(f"{method} {path[:60]}: {answer.status} {data[:300]!r}")
        return answer.status, data
    finally:
        if own:
            connection.close()


def web_path(target: Target, name: str) -> str:
    """``/uri/DIRCAP/NAME`` for the target's web directory."""
    assert target.web_dir is not None
    return f"/uri/{urllib.parse.quote(target.web_dir, safe='')}/{urllib.parse.quote(name)}"


# ---------------------------------------------------------------- workloads


def timed(call: Callable[[], object]) -> float:
    """Seconds ``call`` took."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def small_objects(target: Target, plan: Plan, rng: random.Random) -> dict[str, Any]:
    """1 kB PutObject and GetObject (and, for ours, the web API's PUT and GET beside each)."""
    s3 = target.client()
    s3.head_bucket(Bucket=BUCKET)
    times: dict[str, list[float]] = {"s3_put": [], "s3_get": [], "web_put": [], "web_get": []}
    connection = None
    if target.web_url:
        split = urllib.parse.urlsplit(target.web_url)
        connection = http.client.HTTPConnection(split.hostname, split.port, timeout=600)
    for i in range(plan.small_ops + 5):  # the first five warm up and are dropped
        bodies = [rng.randbytes(plan.small_size) for _ in range(2)]
        calls = {
            "s3_put": lambda: s3.put_object(Bucket=BUCKET, Key=f"small/{i}", Body=bodies[0]),
            "web_put": lambda: http_request(target.web_url or "", "PUT",
                                            web_path(target, f"small-{i}"), bodies[1],
                                            connection),
            "s3_get": lambda: s3.get_object(Bucket=BUCKET, Key=f"small/{i}")["Body"].read(),
            "web_get": lambda: http_request(target.web_url or "", "GET",
                                            web_path(target, f"small-{i}"), None, connection)}
        # Which of the two goes first alternates: of two GETs right after the PUTs, the
        # first costs 2-3 ms more than the second, whichever it is (measured both ways).
        order = ("s3", "web") if i % 2 == 0 or connection is None else ("web", "s3")
        for operation in ("put", "get"):
            for side in order:
                if side == "web" and connection is None:
                    continue
                took = timed(calls[f"{side}_{operation}"])
                if i >= 5:
                    times[f"{side}_{operation}"].append(took)
    if connection is not None:
        connection.close()
    result: dict[str, Any] = {"size": plan.small_size, "ops": plan.small_ops, "raw": times}
    for name, samples in times.items():
        summary = summarize(samples)
        result[name] = summary.as_dict() if summary else None
    if times["web_put"]:
        result["put_ratio"] = result["s3_put"]["median"] / result["web_put"]["median"]
        result["get_ratio"] = result["s3_get"]["median"] / result["web_get"]["median"]
    return result


def large_object(target: Target, plan: Plan, workdir: Path, rng: random.Random
                 ) -> dict[str, Any]:
    """``aws s3 cp`` of a new file of ``plan.large_size`` bytes, boto3's ``upload_file`` of
    another (the same 8 MB parts and 10 threads, in this process: no CLI start-up), and for
    ours a web API PUT of a third, ``plan.large_runs`` times each; and the aws CLI's time
    for one request (its start-up)."""
    path = workdir / "large.bin"
    with open(path, "wb") as out:
        for _ in range(plan.large_size // MB):
            out.write(rng.randbytes(MB))
        out.write(rng.randbytes(plan.large_size % MB))
    env = target.aws_env(workdir / f"aws-{target.name}")
    samples: dict[str, list[float]] = {"s3": [], "boto3": [], "web": []}
    cpu: dict[str, list[float]] = {"s3": [], "boto3": [], "web": []}
    from boto3.s3.transfer import TransferConfig
    s3 = target.client()
    transfer = TransferConfig(multipart_threshold=8 * 1024 * 1024,
                              multipart_chunksize=8 * 1024 * 1024, max_concurrency=10)
    startup = [timed(lambda: run([AWS, "--endpoint-url", target.endpoint, "s3api",
                                  "list-buckets"], env=env)) for _ in range(3)]

    def renew() -> None:  # a new file each time: convergent encoding would reuse shares
        with open(path, "r+b") as out:
            out.write(rng.randbytes(64))

    for n in range(plan.large_runs):
        renew()
        before = target.server_cpu()
        samples["s3"].append(timed(lambda: run(
            [AWS, "--endpoint-url", target.endpoint, "s3", "cp", "--only-show-errors", path,
             f"s3://{BUCKET}/large/{n}.bin"], env=env)))
        cpu["s3"].append(target.server_cpu() - before)
        renew()
        before = target.server_cpu()
        samples["boto3"].append(timed(lambda: s3.upload_file(
            str(path), BUCKET, f"large/boto3-{n}.bin", Config=transfer)))
        cpu["boto3"].append(target.server_cpu() - before)
        if target.web_url:
            renew()
            before = target.server_cpu()

            def put_web() -> None:
                split = urllib.parse.urlsplit(target.web_url or "")
                connection = http.client.HTTPConnection(split.hostname, split.port, timeout=600)
                with open(path, "rb") as body:
                    connection.request("PUT", web_path(target, f"large-{n}.bin"), body=body,
                                       headers={"Content-Length": str(plan.large_size)})
                    answer = connection.getresponse()
                    answer.read()
                    if answer.status >= 300:
                        raise RuntimeError(f"web API PUT: {answer.status}")
                connection.close()
            samples["web"].append(timed(put_web))
            cpu["web"].append(target.server_cpu() - before)
    path.unlink()
    aws_startup = summarize(startup)
    assert aws_startup is not None
    result: dict[str, Any] = {"size": plan.large_size, "seconds": samples, "server_cpu_s": cpu,
                              "aws_one_request_s": aws_startup.as_dict()}
    for name, values in samples.items():
        if values:
            seconds = summarize(values)
            assert seconds is not None
            result[f"{name}_MB_per_s"] = plan.large_size / MB / seconds.median
    if samples["web"]:
        result["ratio"] = result["s3_MB_per_s"] / result["web_MB_per_s"]
        result["boto3_ratio"] = result["boto3_MB_per_s"] / result["web_MB_per_s"]
    return result


def many_keys(target: Target, plan: Plan) -> dict[str, Any]:
    """``plan.list_keys`` objects of 1 byte in one prefix (32 PutObjects at a time), then
    ListObjectsV2 of the prefix in pages of 1,000, ``plan.list_runs`` times."""
    s3 = target.client()
    keys = [f"many/key-{n:06d}" for n in range(plan.list_keys)]
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        for _ in pool.map(lambda key: s3.put_object(Bucket=BUCKET, Key=key, Body=b"k"), keys):
            pass
    created = time.perf_counter() - started

    def list_all() -> list[str]:
        found: list[str] = []
        token: dict[str, str] = {}
        while True:
            page = s3.list_objects_v2(Bucket=BUCKET, Prefix="many/", MaxKeys=1000, **token)
            found += [item["Key"] for item in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return found
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def list_raw() -> int:
        """The same pages over HTTP, signed by botocore, their XML not parsed: the
        gateway's own time."""
        from tests.support.s3_raw import Keys, send, sign
        signer, token, count = Keys(target.access_key, target.secret_key, target.region), "", 0
        while True:
            query = "list-type=2&max-keys=1000&prefix=many%2F" + (
                f"&continuation-token={urllib.parse.quote(token, safe='')}" if token else "")
            page = send(target.endpoint, sign(signer, target.endpoint, "GET", f"/{BUCKET}",
                                              query=query)).body
            count += page.count(b"<Key>")
            found_token = re.search(rb"<NextContinuationToken>([^<]*)<", page)
            if found_token is None:
                return count
            token = found_token.group(1).decode()

    listings, raw = [], []
    for _ in range(plan.list_runs):
        started = time.perf_counter()
        found = list_all()
        listings.append(time.perf_counter() - started)
        if found != keys:
            raise RuntimeError(f"ListObjectsV2 gave {len(found)} keys, not the {len(keys)} put")
        started = time.perf_counter()
        if list_raw() != len(keys):
            raise RuntimeError("ListObjectsV2 over raw HTTP gave another number of keys")
        raw.append(time.perf_counter() - started)
    summary, raw_summary = summarize(listings), summarize(raw)
    assert summary is not None and raw_summary is not None
    return {"keys": plan.list_keys, "create_seconds": created,
            "create_per_s": plan.list_keys / created, "list_seconds": summary.as_dict(),
            "list_http_seconds": raw_summary.as_dict()}


def restic_backup(target: Target, plan: Plan, workdir: Path, rng: random.Random
                  ) -> dict[str, Any]:
    """``restic init`` and ``restic backup`` of ``plan.restic_files`` random files into an S3
    repository; seconds, and CPU seconds per MB of restic and of the server's processes."""
    restic = shutil.which("restic")
    if restic is None:
        raise RuntimeError("restic is not installed (misc/ci/install-system-packages.sh)")
    tree = workdir / "restic-tree"
    if not tree.exists():
        for n in range(plan.restic_files):
            path = tree / f"d{n // 100:02d}" / f"f{n:05d}.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(rng.randbytes(plan.restic_file_size))
    home = workdir / f"restic-{target.name}"
    env = _env(home)
    env.update(AWS_ACCESS_KEY_ID=target.access_key, AWS_SECRET_ACCESS_KEY=target.secret_key,
               RESTIC_PASSWORD="bench", RESTIC_CACHE_DIR=str(home / "cache"))
    repo = ["--repo", f"s3:{target.endpoint}/restic-{target.name}", "-o",
            f"s3.region={target.region}"]
    run([restic, *repo, "init"], env=env)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = target.server_cpu()
    seconds = timed(lambda: run([restic, *repo, "backup", "--quiet", tree], env=env))
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = target.server_cpu() - server_before
    restic_cpu = ((children_after.ru_utime + children_after.ru_stime)
                  - (children_before.ru_utime + children_before.ru_stime))
    megabytes = plan.restic_files * plan.restic_file_size / MB
    return {"files": plan.restic_files, "MB": megabytes, "seconds": seconds,
            "MB_per_s": megabytes / seconds, "restic_cpu_s": restic_cpu,
            "server_cpu_s": server_cpu, "restic_cpu_s_per_MB": restic_cpu / megabytes,
            "server_cpu_s_per_MB": server_cpu / megabytes}


def measure(target: Target, plan: Plan, sections: Sequence[str], workdir: Path
            ) -> dict[str, Any]:
    """Every section asked for against one target; a failed section is reported, not
    fatal."""
    rng = random.Random(28)
    target.client().create_bucket(Bucket=BUCKET)
    results: dict[str, Any] = {"errors": {}}
    work = {"small": lambda: small_objects(target, plan, rng),
            "large": lambda: large_object(target, plan, workdir, rng),
            "list": lambda: many_keys(target, plan),
            "restic": lambda: restic_backup(target, plan, workdir, rng)}
    for name in sections:
        log(f"[{target.name}] {name}")
        try:
            results[name] = work[name]()
        except Exception as error:  # noqa: BLE001 - reported in the table and the JSON
            log(f"[{target.name}] {name} FAILED: {error}")
            results["errors"][name] = str(error)
    return results


# ---------------------------------------------------------------- report


def _fmt(value: float | None, unit: str = "", digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}{unit}"


def table(report: dict[str, Any]) -> str:
    """The figures as a Markdown table: ours, the web API beside it, SeaweedFS."""
    ours = report["systems"].get("ours", {})
    weed = report["systems"].get("seaweedfs", {})

    def get(system: dict[str, Any], *path: str) -> Any:
        value: Any = system
        for part in path:
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def ms(value: float | None) -> float | None:
        return None if value is None else value * 1000

    rows = [
        ("1 kB PutObject, median (ms)", ms(get(ours, "small", "s3_put", "median")),
         ms(get(ours, "small", "web_put", "median")), get(ours, "small", "put_ratio"),
         "≤ 1.3", ms(get(weed, "small", "s3_put", "median"))),
        ("1 kB GetObject, median (ms)", ms(get(ours, "small", "s3_get", "median")),
         ms(get(ours, "small", "web_get", "median")), get(ours, "small", "get_ratio"),
         "≤ 1.3", ms(get(weed, "small", "s3_get", "median"))),
        (f"{report['plan']['large_size'] // MB} MB upload, aws s3 cp (MB/s)",
         get(ours, "large", "s3_MB_per_s"), get(ours, "large", "web_MB_per_s"),
         get(ours, "large", "ratio"), "≥ 0.9", get(weed, "large", "s3_MB_per_s")),
        ("  the same by boto3 in process (MB/s)", get(ours, "large", "boto3_MB_per_s"),
         get(ours, "large", "web_MB_per_s"), get(ours, "large", "boto3_ratio"), "",
         get(weed, "large", "boto3_MB_per_s")),
        ("  aws CLI, one request (s)", get(ours, "large", "aws_one_request_s", "median"), None,
         None, "", get(weed, "large", "aws_one_request_s", "median")),
        (f"ListObjectsV2, {report['plan']['list_keys']:,} keys (s)",
         get(ours, "list", "list_seconds", "median"), None, None, "≤ 1 s",
         get(weed, "list", "list_seconds", "median")),
        ("  the same over HTTP, XML not parsed (s)",
         get(ours, "list", "list_http_seconds", "median"), None, None, "",
         get(weed, "list", "list_http_seconds", "median")),
        ("  making them, 32 at a time (PutObject/s)", get(ours, "list", "create_per_s"), None,
         None, "", get(weed, "list", "create_per_s")),
        (f"restic backup, {report['plan']['restic_files']:,} files (s)",
         get(ours, "restic", "seconds"), None, None, "", get(weed, "restic", "seconds")),
        ("  restic CPU (s per MB)", get(ours, "restic", "restic_cpu_s_per_MB"), None, None, "",
         get(weed, "restic", "restic_cpu_s_per_MB")),
        ("  server CPU (s per MB)", get(ours, "restic", "server_cpu_s_per_MB"), None, None, "",
         get(weed, "restic", "server_cpu_s_per_MB")),
    ]
    lines = ["| workload | S3 gateway | web API | S3 / web API | target | SeaweedFS |",
             "|---|---|---|---|---|---|"]
    for label, s3, web, ratio, target, other in rows:
        lines.append(f"| {label} | {_fmt(s3)} | {_fmt(web)} | {_fmt(ratio)} | {target} |"
                     f" {_fmt(other) if weed else report.get('seaweedfs_skipped', '–')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 if every section ran, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check the harness")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated, from {', '.join(SECTIONS)}")
    parser.add_argument("--json", type=Path, default=Path("bench-s3.json"))
    parser.add_argument("--weed", type=Path, default=Path(os.environ.get("WEED", DEFAULT_WEED)),
                        help="SeaweedFS's weed binary [~/.cache/seaweedfs/bin/weed]")
    parser.add_argument("--no-weed", action="store_true", help="skip SeaweedFS")
    parser.add_argument("--workdir", type=Path,
                        help="where the grids and files go (default: a new temporary"
                        " directory, removed at the end)")
    args = parser.parse_args(argv)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {', '.join(SECTIONS)}")
    plan = Plan.smoke() if args.smoke else Plan()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-s3-"))
    workdir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"plan": plan.__dict__, "sections": sections, "systems": {},
                              "targets": TARGETS, "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                              "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    started = time.monotonic()
    try:
        with our_gateway(workdir / "ours", plan) as target:
            report["systems"]["ours"] = measure(target, plan, sections, workdir)
        if args.no_weed:
            report["seaweedfs_skipped"] = "not run (--no-weed)"
        elif not args.weed.exists():
            report["seaweedfs_skipped"] = f"not built ({args.weed} missing)"
            log(f"SeaweedFS skipped: {args.weed} is missing (build it with go, see the"
                " docstring)")
        else:
            with seaweedfs(args.weed, workdir / "weed") as target:
                report["systems"]["seaweedfs"] = measure(target, plan, sections, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    report["total_s"] = time.monotonic() - started
    report["loadavg_end"] = os.getloadavg()
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))
    errors = {f"{name}: {section}": message for name, system in report["systems"].items()
              for section, message in system.get("errors", {}).items()}
    for where, message in errors.items():
        print(f"FAILED {where}: {message}", file=sys.stderr)
    print(f"\nwrote {args.json} in {report['total_s']:.0f} s")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
