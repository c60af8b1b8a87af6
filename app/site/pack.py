"""A page's Bokeh documents, gzip-compressed in the page and unpacked by the browser before BokehJS
embeds them.

Panel saves each document as JSON in a `<script type="application/json">` and embeds it with
`Bokeh.embed.embed_items(docs_json, ...)` at DOMContentLoaded. The JSON is most of a page (7.3 of
the 8.1 MB that 63 pages took on 4 December, every lesson in both themes): it repeats model
attributes, class names and stylesheets, and compresses about six times over. Here each document is
stored gzip-compressed, base64 text in a `<script type="application/x-kvlab-doc">`, and the embed
code unpacks it with the browser's DecompressionStream (as the worker does the memory snapshot)
before handing it to BokehJS; the page then loads 5.6 MB less in all (docs/site.md). What waits
for BokehJS's documents (the bridge, the page scripts) already polls for them, so a document that
arrives a few milliseconds later changes nothing else.
"""

from __future__ import annotations

import base64
import gzip
import re

from .discover import BuildError

PACKED_TYPE = "application/x-kvlab-doc"
_DOC = re.compile(r'<script type="application/json" id="([0-9a-f-]+)">\s*(.*?)\s*</script>', re.S)
_READ = "const docs_json = document.getElementById('%s').textContent;"
_EMBED = "root.Bokeh.embed.embed_items(docs_json, render_items);"
# Defined once per page, before its first document: base64 text -> the document's JSON text.
UNPACK_JS = ("<script>window.kvlabUnpack = (b64) => new Response(new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))])"
             ".stream().pipeThrough(new DecompressionStream('gzip'))).text();</script>\n")
_UNPACKED_EMBED = "window.kvlabUnpack(docs_json).then((docs) => root.Bokeh.embed.embed_items(docs, render_items));"


def pack_documents(page_html: str) -> str:
    """The page with each Bokeh document compressed and its embed code unpacking it first."""
    found = list(_DOC.finditer(page_html))
    if not found:
        return page_html
    if page_html.count(_EMBED) != len(found):
        raise BuildError(f"the saved page has {len(found)} documents and {page_html.count(_EMBED)} embed calls: "
                         "Panel's embed code changed; app/site/pack.py must follow it")
    out, last = [], 0
    for n, m in enumerate(found):
        packed = base64.b64encode(gzip.compress(m.group(2).encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")
        out += [page_html[last:m.start()], UNPACK_JS if n == 0 else "",
                f'<script type="{PACKED_TYPE}" id="{m.group(1)}">{packed}</script>']
        last = m.end()
    out.append(page_html[last:])
    page_html = "".join(out)
    for m in found:
        if _READ % m.group(1) not in page_html:
            raise BuildError(f"no embed code reads the document {m.group(1)}: app/site/pack.py must follow Panel's embed code")
    return page_html.replace(_EMBED, _UNPACKED_EMBED)


def unpacked_documents(page_html: str) -> list[str]:
    """The JSON text of each document a built page holds (for tests and tools that read a page)."""
    pattern = re.compile(rf'<script type="{re.escape(PACKED_TYPE)}" id="[0-9a-f-]+">([A-Za-z0-9+/=]*)</script>')
    return [gzip.decompress(base64.b64decode(b64)).decode("utf-8") for b64 in pattern.findall(page_html)]
