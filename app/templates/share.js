// "Copy link" and "Copy embed code", in both runtimes: each button's callback (app/shell/share.py)
// calls these with its own Bokeh model, the fallback text box and what to copy. Written once here,
// not into every button: two buttons' copies were 3 KB of each of the static site's 58 pages.
window.kvlabEmbedText = (title, height, href) => {
  // The iframe snippet, in embed mode (no site header): the URL is attribute-escaped (& and ")
  // before it goes between quotes, and a short script sizes the iframe to the height the page
  // reports with postMessage (app/templates/embed.js), so course notes show no inner scroll bar.
  const u = new URL(href || window.location.href);
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
// A student's picks, kept in this browser's storage as they are made, in both runtimes: the served
// lesson's choice buttons and the static site's reveal script (lessons/render.py) call
// kvlabRecordPick with the step's key and the choice's index; the lesson's code is the page's own
// (lesson_a1, lesson_a1.html, lesson_a1.dark.html). "Copy my answers" writes them into a link to the
// answer key page (#picks=A1:a1-llama=1,a1-headdim=0;C2:...), "Download my answers" into a file;
// the key page reads either back (lessons/picks.py), treating both as untrusted.
window.kvlabPicksStore = "kvlab-picks";
window.kvlabPicks = () => {
  let picks = null;
  try { picks = JSON.parse(localStorage.getItem(window.kvlabPicksStore) || "{}"); } catch (e) { picks = null; }
  return picks && typeof picks === "object" && !Array.isArray(picks) ? picks : {};
};
window.kvlabRecordPick = (key, index) => {
  const page = /lesson_([a-z]\d+)(\.dark)?(\.html)?$/.exec(window.location.pathname);
  if (!page) { return; }
  const picks = window.kvlabPicks(), code = page[1].toUpperCase();
  picks[code] = Object.assign({}, picks[code], { [key]: index });
  // Storage refused (a private window's quota, storage switched off): the pick stays in the address bar only.
  try { localStorage.setItem(window.kvlabPicksStore, JSON.stringify(picks)); } catch (e) { /* see above */ }
};
window.kvlabPicksText = (picks) => Object.entries(picks).map(([code, steps]) =>
  code + ":" + Object.entries(steps || {}).map(([key, index]) => key + "=" + index).join(",")).join(";");
// The inverse, for the key page: {code: {key: raw value}}, every value still a string to check.
window.kvlabParsePicksText = (text) => {
  const picks = {};
  for (const lesson of text.split(";")) {
    const at = lesson.indexOf(":");
    if (at < 1) { continue; }
    const steps = picks[lesson.slice(0, at)] = picks[lesson.slice(0, at)] || {};
    for (const pair of lesson.slice(at + 1).split(",")) {
      const eq = pair.indexOf("=");
      if (eq > 0) { steps[pair.slice(0, eq)] = pair.slice(eq + 1); }
    }
  }
  return picks;
};
window.kvlabPicksLink = (keyHref) => {
  const u = new URL(keyHref, window.location.href);
  u.hash = "picks=" + encodeURIComponent(window.kvlabPicksText(window.kvlabPicks()));
  return u.href;
};
window.kvlabDownloadPicks = (version) => {
  const file = JSON.stringify({ kvlab: version, picks: window.kvlabPicks() }, null, 1);
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([file], { type: "application/json" }));
  a.download = "kvlab-answers.json";
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  window.kvlabLastDownload = file;
};
// A step's own link: the lesson's address with only the theme kept and ?step=<key> (the page shows
// that step alone; with embed=1, as "Copy embed code" writes it, without the site's header).
window.kvlabStepLink = (key) => {
  const u = new URL(window.location.href), kept = new URLSearchParams();
  if (u.searchParams.get("theme")) { kept.set("theme", u.searchParams.get("theme")); }
  kept.set("step", key);
  u.search = kept.toString(); u.hash = "";
  return u.href;
};
