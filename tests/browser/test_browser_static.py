"""The two entries on a real server: serve.py sends Streamlit's front end compressed; app.py still runs alone.

Every other browser test runs against serve.py (tests/browser/_browser.start_server's default), so the app's
pages, links and controls are checked through it; here, what it changes on the wire, and that the plain
`streamlit run app.py` (Streamlit Community Cloud's main file) still draws the start page.
"""

from __future__ import annotations

import gzip
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from streamlit import file_util

from tests.browser._browser import exceptions, served, wait_charts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BUILD = Path(file_util.get_static_dir())


def _get(url: str, encoding: str | None) -> tuple[dict[str, str], bytes]:
    req = urllib.request.Request(url, headers={"Accept-Encoding": encoding} if encoding else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return {k.lower(): v for k, v in r.headers.items()}, r.read()


def test_serve_py_sends_streamlits_front_end_gzipped_and_unchanged(server):
    _, html = _get(server + "/", None)
    scripts = re.findall(rb'src="\.?/?(static/js/[^"]+\.js)"', html)
    assert scripts, "index.html names no script"
    for rel in scripts:
        on_disk = (BUILD / rel.decode()).read_bytes()
        headers, body = _get(f"{server}/{rel.decode()}", "gzip, deflate, br")
        assert headers.get("content-encoding") == "gzip" and gzip.decompress(body) == on_disk
        assert "immutable" in headers["cache-control"]
        headers, body = _get(f"{server}/{rel.decode()}", None)  # no gzip asked: the plain file
        assert "content-encoding" not in headers and body == on_disk
    # a path out of the build folder is passed on to Streamlit, which refuses it: never a file elsewhere
    with pytest.raises(urllib.error.HTTPError) as refused:
        _get(server + "/static/..%2F..%2F__init__.py", "gzip")
    assert refused.value.code == 400


def test_plain_app_py_entry_still_draws_the_start_page(browser_context):
    with served(app="app.py") as (_proc, base, _log):
        pg = browser_context.new_page()
        try:
            pg.goto(base + "/?preset=bat")
            assert wait_charts(pg) and not exceptions(pg)
        finally:
            pg.close()
