// Embed mode, in both runtimes (the served app and the static site): a page opened with ?embed=1
// (or ?embed=true) inside another page, as "Copy embed code" writes it. The <html> element gets the
// class kvlab-embed, which hides the site header and lets the page grow to its content (EMBED_CSS in
// app/shell/a11y.py), and the page reports its height to the frame's parent as
// {type: "kvlab-resize", height}, which the embed code's script sets as the iframe's height, so
// course notes show the whole panel with no inner scroll bar.
(() => {
  const value = new URLSearchParams(window.location.search).get("embed") || "";
  if (!["1", "true"].includes(value)) { return; }
  document.documentElement.classList.add("kvlab-embed");
  if (window.parent === window) { return; }
  let last = 0;
  const report = () => {
    const height = Math.ceil(document.documentElement.scrollHeight);
    if (height !== last) {
      last = height;
      window.parent.postMessage({ type: "kvlab-resize", height, page: window.location.pathname }, "*");
    }
  };
  new ResizeObserver(report).observe(document.body);
  window.addEventListener("load", report);
  // Layout inside Bokeh's shadow roots does not always resize <body>.
  setInterval(report, 1000);
})();
