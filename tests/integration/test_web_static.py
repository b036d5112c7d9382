"""``/static/``: a node's web server serves ``[node]web.static`` (``NODEDIR/public_html``).

As Tahoe 1.20 does. Real nodes on 127.0.0.1: a storage node (its site built
at the first request) with files in ``public_html``. Nothing outside the
directory is reachable through it, nothing is written through it, and a file
of an unknown type is not sent as HTML.
"""
from __future__ import annotations

from pathlib import Path

from tests.support.dirapi import WebAPI
from tests.support.grid import start_introducer
from tests.support.nodes import Shares, TahoeTool, config_for_tests, edit_tahoe_cfg, our_tahoe
from tests.support.ports import free_port
from tests.support.processes import ProcessSet


def test_static_files_are_served_from_the_nodes_directory(tmp_path: Path) -> None:
    tool = TahoeTool(our_tahoe(), tmp_path / "logs")
    with ProcessSet() as processes:
        _, furl = start_introducer(tool, tmp_path / "introducer", processes)
        basedir = tmp_path / "node"
        tool.create_node(basedir, introducer_furl=furl, shares=Shares(1, 1, 1), nickname="node",
                         web_port=free_port(), tub_port=free_port())
        edit_tahoe_cfg(basedir, config_for_tests(storage=True))
        (basedir / "public_html" / "docs").mkdir(parents=True, exist_ok=True)
        (basedir / "public_html" / "hello.html").write_text("<p>hello</p>")
        (basedir / "public_html" / "docs" / "notes").write_bytes(b"<script>x</script>")
        (basedir / "private" / "secret.txt").write_text("not for the web")
        node = tool.start(basedir, processes)
        api = WebAPI(node.node_url(60))
        page = api.request("GET", "/static/hello.html")
        assert page.status == 200 and page.body == b"<p>hello</p>"
        assert page.headers["content-type"].startswith("text/html")
        notes = api.request("GET", "/static/docs/notes")
        assert notes.status == 200 and notes.body == b"<script>x</script>"
        assert notes.headers["content-type"] == "application/octet-stream"
        assert "notes" in api.request("GET", "/static/docs/").text  # a directory is listed
        for outside in ("/static/../private/secret.txt", "/static/%2e%2e/private/secret.txt",
                        "/static/..%2Fprivate%2Fsecret.txt", "/static/docs/../../tahoe.cfg"):
            answer = api.request("GET", outside)
            assert b"not for the web" not in answer.body and b"[node]" not in answer.body, outside
        assert api.request("GET", "/static/nope.html").status == 404
        assert api.request("PUT", "/static/hello.html", b"changed").status == 405
        assert (basedir / "public_html" / "hello.html").read_text() == "<p>hello</p>"
