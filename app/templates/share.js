// "Copy link" and "Copy embed code", in both runtimes: each button's callback (app/shell/share.py)
// calls these with its own Bokeh model, the fallback text box and what to copy. Written once here,
// not into every button: two buttons' copies were 3 KB of each of the static site's 58 pages.
window.kvlabEmbedText = (title, height) => {
  // The iframe snippet, in embed mode (no site header): the URL is attribute-escaped (& and ")
  // before it goes between quotes, and a short script sizes the iframe to the height the page
  // reports with postMessage (app/templates/embed.js), so course notes show no inner scroll bar.
  const u = new URL(window.location.href);
  u.searchParams.set("embed", "1");
  return '<iframe src="' + u.href.replace(/&/g, "&amp;").replace(/"/g, "%22") + '" title="kvlab: ' + title +
    '" width="100%" height="' + height + '" style="border:0" loading="lazy" data-kvlab-embed></iframe>\n' +
    '<script>addEventListener("message", function (e) { var d = e.data; ' +
    'if (!d || d.type !== "kvlab-resize") return; document.querySelectorAll("iframe[data-kvlab-embed]")' +
    '.forEach(function (f) { if (f.contentWindow === e.source) f.style.height = d.height + "px"; }); });<' + '/script>';
};
window.kvlabLocalWarning = () =>
  ["localhost", "127.0.0.1", "[::1]", "0.0.0.0"].includes(window.location.hostname)
    ? "local address: only this computer can open it" : null;
window.kvlabCopy = (source, box, text, original, warning) => {
  // The button says what happened for a moment; when the clipboard is refused, the text goes into
  // the box below it to copy by hand.
  const flash = (label) => {
    source.label = warning ? label + " (" + warning + ")" : label;
    setTimeout(() => { source.label = original; }, warning ? 6000 : 2500);
  };
  window.kvlabCopyWarning = warning;
  const fallback = () => {
    const ta = document.createElement("textarea");
    ta.value = text; ta.setAttribute("readonly", ""); ta.style.position = "fixed"; ta.style.opacity = "0";
    document.body.appendChild(ta); ta.select();
    let ok = false; try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    ta.remove(); return ok;
  };
  const blocked = () => {
    box.value = text; box.visible = true;
    flash("Copy blocked: text below");
  };
  window.kvlabLastCopied = text;
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => { box.visible = false; flash("Copied \u2713"); },
                                             () => { if (fallback()) { box.visible = false; flash("Copied \u2713"); } else { blocked(); } });
  } else if (fallback()) {
    box.visible = false; flash("Copied \u2713");
  } else {
    blocked();
  }
};
