"""A client node of ours with the S3 gateway, an account on it, and boto3 pointed at it.

Use :func:`started_s3_node` in a module-scoped fixture (one node per test
module), on the session's grid::

    @pytest.fixture(scope="module")
    def s3_node(local_grid, tmp_path_factory):
        with started_s3_node(local_grid, tmp_path_factory.mktemp("s3"), DEFAULT_SHARES) as node:
            yield node

    def test_something(s3_node):
        s3 = s3_node.client()            # a boto3 S3 client for the node's first account
        s3.create_bucket(Bucket="b")
        # other tools: s3_node.endpoint, s3_node.access_key, s3_node.secret_key,
        # s3_node.region, s3_node.env() (AWS_* variables for the aws CLI, restic, ...)

The node joins the grid's servers (at their proxies) with ``[s3] enabled`` on
a free 127.0.0.1 port; the account is made by ``tahoe s3 add-account`` (a
new root directory), and the endpoint is read from ``NODEDIR/s3.url``.
:meth:`S3Node.add_account` makes more accounts. The node is stopped (by PID)
when the context ends.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from tests.support.grid import Gateway
from tests.support.nodes import Shares, TahoeTool, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet, wait_until
from tests.support.proxied_grid import ProxiedGrid, create_static_client, start_static_client

__all__ = ["S3Node", "S3_START_TIMEOUT", "started_s3_node", "parse_account_output"]

#: Seconds for the gateway to write ``s3.url`` once the web gateway runs.
S3_START_TIMEOUT = 60.0
_S3_URL = re.compile(r"http://127\.0\.0\.1:\d+/\n")


def parse_account_output(text: str) -> dict[str, str]:
    """The ``name = value`` lines ``tahoe s3 add-account`` prints, as a dict."""
    found = {}
    for line in text.splitlines():
        name, sep, value = line.partition(" = ")
        if sep:
            found[name.strip()] = value.strip()
    return found


@attrs.frozen
class S3Node:
    """A running client node with the S3 gateway and one account.

    :ivar gateway: the node and its web gateway (for the web API).
    :ivar basedir: the node directory.
    :ivar endpoint: the S3 endpoint URL, ``http://127.0.0.1:PORT/``.
    :ivar access_key: the account's access key id.
    :ivar secret_key: the account's secret access key.
    :ivar root: the account's root directory (write cap; its children are the buckets).
    :ivar tool: our ``tahoe`` (for more CLI commands).
    """

    gateway: Gateway
    basedir: Path
    endpoint: str
    access_key: str
    secret_key: str
    root: str
    tool: TahoeTool
    region: str = "us-east-1"

    @property
    def log(self) -> Path:
        """The node's log file."""
        return self.tool.log_dir / f"{self.basedir.name}.log"

    def add_account(self, *args: str) -> dict[str, str]:
        """``tahoe s3 add-account ARGS``: its printed values (``access_key_id``,
        ``secret_access_key``, ``endpoint_url``)."""
        return parse_account_output(self.tool.cli("-d", self.basedir, "s3", "add-account",
                                                  *args))

    def client(self, access_key: str | None = None, secret_key: str | None = None,
               **config: Any) -> Any:
        """A boto3 S3 client for this gateway (path style, our region, Signature Version 4
        for presigned URLs too: boto3 presigns with version 2 unless told, and the
        gateway speaks only 4; no retries).

        :param config: more ``botocore.config.Config`` settings.
        """
        import boto3
        from botocore.config import Config
        settings: dict[str, Any] = {"s3": {"addressing_style": "path"},
                                    "signature_version": "s3v4",  # presigned URLs too
                                    "retries": {"max_attempts": 1},
                                    "connect_timeout": 10, "read_timeout": 120}
        settings.update(config)
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=access_key or self.access_key,
                            aws_secret_access_key=secret_key or self.secret_key,
                            config=Config(**settings))

    def env(self) -> dict[str, str]:
        """The environment an S3 tool reads its endpoint-less credentials from (``AWS_*``),
        on top of ours; no configuration files of the user are read."""
        env = dict(os.environ)
        env.update(AWS_ACCESS_KEY_ID=self.access_key, AWS_SECRET_ACCESS_KEY=self.secret_key,
                   AWS_DEFAULT_REGION=self.region, AWS_REGION=self.region,
                   AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
                   AWS_ENDPOINT_URL=self.endpoint.rstrip("/"))
        return env


@contextmanager
def started_s3_node(grid: ProxiedGrid, workdir: Path, shares: Shares, *,
                    s3_config: Mapping[str, str] | None = None,
                    node_config: Mapping[str, str] | None = None) -> Iterator[S3Node]:
    """Run a client with the S3 gateway on ``grid``'s servers, with one account.

    :param s3_config: more ``[s3]`` settings (``region``, ``multipart.max_age``...).
    :param node_config: ``[node]`` settings (``tempdir``...).
    """
    basedir = workdir / "s3-client"
    tool = TahoeTool(our_tahoe(), workdir / "logs")
    create_static_client(tool, basedir, shares=shares)
    settings = {"enabled": "true", "port": f"tcp:{free_port()}:interface=127.0.0.1"}
    settings.update(s3_config or {})
    edit_tahoe_cfg(basedir, {"s3": settings, **({"node": dict(node_config)} if node_config
                                                else {})})
    with ProcessSet() as processes:
        gateway = start_static_client(tool, basedir, processes, grid.servers, shares=shares,
                                      create=False)
        url_file = basedir / "s3.url"

        def endpoint() -> str | None:
            try:
                text = url_file.read_text()
            except FileNotFoundError:
                return None
            return text if _S3_URL.fullmatch(text) else None
        url = wait_until(endpoint, S3_START_TIMEOUT, str(url_file),
                         processes=[gateway.node.process]).strip()
        account = parse_account_output(tool.cli("-d", basedir, "s3", "add-account"))
        line = next(line for line in (basedir / "private" / "s3-accounts").read_text()
                    .splitlines() if line.startswith(account["access_key_id"] + " "))
        yield S3Node(gateway, basedir, url, account["access_key_id"],
                     account["secret_access_key"], line.split()[2], tool,
                     settings.get("region", "us-east-1"))
