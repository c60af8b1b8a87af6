"""The static site's pages hold their Bokeh documents gzip-compressed (app/site/pack.py): the packed
page unpacks to exactly the JSON Panel wrote, and its embed code unpacks before BokehJS embeds. The
browser side runs in every site test that opens a page (tests/site)."""

from __future__ import annotations

import json

import pytest
from kvlab.app.site.discover import BuildError
from kvlab.app.site.pack import PACKED_TYPE, UNPACK_JS, pack_documents, unpacked_documents

DOC = json.dumps({"d1": {"roots": [{"type": "object", "name": "Div", "attributes": {"text": "</b> & <i>"}}]}})
EMBED = """<script>
  const docs_json = document.getElementById('0a1b-2c').textContent;
  const render_items = [];
  root.Bokeh.embed.embed_items(docs_json, render_items);
</script>"""
PAGE = f'<html><body><div></div>\n<script type="application/json" id="0a1b-2c">\n  {DOC}\n</script>\n{EMBED}</body></html>'


def test_a_packed_page_unpacks_to_the_document_panel_wrote():
    packed = pack_documents(PAGE)
    assert unpacked_documents(packed) == [DOC]
    assert "application/json" not in packed and f'<script type="{PACKED_TYPE}" id="0a1b-2c">' in packed
    assert packed.count(UNPACK_JS) == 1 and packed.index(UNPACK_JS) < packed.index(PACKED_TYPE)
    assert "embed_items(docs_json" not in packed and "kvlabUnpack(docs_json).then((docs) => root.Bokeh.embed.embed_items(docs" in packed


def test_a_page_without_a_document_is_left_alone():
    assert pack_documents("<html><body>plain</body></html>") == "<html><body>plain</body></html>"


def test_embed_code_panel_no_longer_writes_fails_the_build():
    with pytest.raises(BuildError, match="embed"):
        pack_documents(PAGE.replace("root.Bokeh.embed.embed_items(docs_json, render_items);", "Bokeh.embed(docs_json);"))
    with pytest.raises(BuildError, match="reads the document"):
        pack_documents(PAGE.replace("getElementById('0a1b-2c')", "getElementById('other')"))
