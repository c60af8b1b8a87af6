"""The answer key page's reader of a student's answers: the link "Copy my answers" writes
(answers#picks=A1:a1-llama=1,...), the file "Download my answers" saves, or either pasted, shown
beside the key: each pick right or wrong, and a score per lesson.

It runs in the browser alone (the static site has no Python behind the page), so it works the same
under `kvlab serve` and in the site. What it reads is untrusted: at most MAX_TEXT_CHARS of it is read,
lessons, questions and choices this key does not hold are left out and named in one message, and
everything is written with textContent, never as HTML.
"""

from __future__ import annotations

import param
from panel.reactive import ReactiveHTML

MAX_TEXT_CHARS = 100_000  # a whole course's picks take under 2 kB as a file
MAX_NAMES = 8  # names listed in each group of the "ignored" message; the rest are counted


def reader_key(key: dict) -> list:
    """What the reader compares with: [[code, title, [[step key, question, [labels], right index]]]]. The
    questions with choices only: an estimate (a numeric step) is not among the picks a student exports."""
    return [[lesson["code"], lesson["title"],
             [[q["key"], q["question"], [c["label"] for c in q["choices"]], next(i for i, c in enumerate(q["choices"]) if c["right"])]
              for q in lesson["questions"] if q["choices"]]] for lesson in key["lessons"]]


READ_JS = """
const clip = (s) => { s = String(s); return s.length > 40 ? s.slice(0, 40) + '\\u2026' : s; };
const shown = (v) => clip(typeof v === 'string' || typeof v === 'number' ? v : typeof v);
const add = (parent, tag, text) => {
  const e = document.createElement(tag);
  if (text) e.textContent = text;
  parent.appendChild(e);
  return e;
};
const say = (text) => { message.textContent = text; };
const lessons = new Map(data.key.map(([code, title, qs]) => [code, new Map(qs.map((q) => [q[0], q]))]));
const picksOf = (text, source) => {
  const at = text.indexOf('#picks=');
  if (at >= 0 || text.startsWith('picks=')) {
    try { return [window.kvlabParsePicksText(decodeURIComponent(text.slice(text.indexOf('picks=') + 6))), null]; }
    catch (e) { say(source + ' is not a link that "Copy my answers" wrote: its #picks= part does not decode.'); return null; }
  }
  let file = null;
  try { file = JSON.parse(text); } catch (e) { file = null; }
  if (!file || typeof file !== 'object' || !file.picks || typeof file.picks !== 'object' || Array.isArray(file.picks)) {
    say(source + ' is neither a file that "Download my answers" saved (JSON with a "picks" object) nor a link with #picks=.');
    return null;
  }
  return [file.picks, typeof file.kvlab === 'string' ? file.kvlab : null];
};
const checked = (picks) => {
  const chosen = new Map(), ignored = [['lessons', []], ['questions', []], ['choices', []]];
  for (const [code, steps] of Object.entries(picks)) {
    const qs = lessons.get(code);
    if (!qs || !steps || typeof steps !== 'object' || Array.isArray(steps)) { ignored[0][1].push(shown(code)); continue; }
    for (const [key, value] of Object.entries(steps)) {
      const q = qs.get(key);
      if (!q) { ignored[1][1].push(code + ' ' + shown(key)); continue; }
      const index = typeof value === 'number' ? value : typeof value === 'string' && /^\\d{1,3}$/.test(value) ? Number(value) : NaN;
      if (!Number.isInteger(index) || index < 0 || index >= q[2].length) {
        ignored[2][1].push(code + ' ' + key + '=' + shown(value));
        continue;
      }
      chosen.set(code + ' ' + key, index);
    }
  }
  return [chosen, ignored.filter(([, names]) => names.length)];
};
const listed = (names) => names.slice(0, MAX_NAMES).join(', ')
  + (names.length > MAX_NAMES ? ' and ' + (names.length - MAX_NAMES) + ' more' : '');
state.read = (text, source) => {
  result.replaceChildren();
  say('');
  if (text.length > MAX_TEXT_CHARS) {
    say(source + ' is ' + Math.ceil(text.length / 1000) + ' kB; answers files are under 2 kB, and at most '
        + MAX_TEXT_CHARS / 1000 + ' kB is read. Nothing was read.');
    return;
  }
  const read = picksOf(text.trim(), source);
  if (!read) { return; }
  const [chosen, ignored] = checked(read[0]);
  const notes = [];
  if (ignored.length) {
    notes.push('Ignored, as this key does not hold them: ' + ignored.map(([what, names]) => what + ' ' + listed(names)).join('; ') + '.');
  }
  if (read[1] && read[1] !== data.version) {
    notes.push('The file was saved with kvlab ' + clip(read[1]) + '; this key is kvlab ' + data.version + '.');
  }
  let right = 0;
  for (const [code, title, qs] of data.key) {
    const picked = qs.filter((q) => chosen.has(code + ' ' + q[0]));
    if (!picked.length) { continue; }
    const good = picked.filter((q) => chosen.get(code + ' ' + q[0]) === q[3]).length;
    right += good;
    const unanswered = qs.length - picked.length;
    const score = good + ' of ' + picked.length + ' right' + (unanswered ? ' (' + unanswered + ' not answered)' : '');
    const head = add(result, 'h3', code + '. ' + title + ': ' + score);
    head.dataset.lesson = code;
    const list = add(result, 'ul');
    for (const q of picked) {
      const index = chosen.get(code + ' ' + q[0]), ok = index === q[3];
      const item = add(list, 'li');
      item.dataset.step = q[0];
      item.dataset.pick = ok ? 'right' : 'wrong';
      add(item, 'span', q[1] + ' ');
      add(item, 'strong', 'Picked: ' + q[2][index] + '. ');
      add(item, 'span', ok ? '\\u2713 Right.' : '\\u2717 Wrong: the key is ' + q[2][q[3]] + '.');
    }
  }
  const total = chosen.size ? right + ' of ' + chosen.size + ' answers right.' : 'No answer to show.';
  say([total, ...notes].join(' '));
};
file.addEventListener('change', () => {
  const f = file.files && file.files[0];
  if (!f) { return; }
  if (f.size > MAX_TEXT_CHARS * 4) {  // not even read into memory
    result.replaceChildren();
    say('The file is ' + Math.ceil(f.size / 1000) + ' kB; answers files are under 2 kB. Nothing was read.');
    return;
  }
  f.text().then((t) => state.read(t, 'The file ' + clip(f.name)), () => say('The file ' + clip(f.name) + ' could not be read.'));
});
read.addEventListener('click', () => state.read(paste.value, 'The pasted text'));
const fromLink = () => { if (window.location.hash.startsWith('#picks=')) { state.read(window.location.hash, 'The link'); } };
window.addEventListener('hashchange', fromLink);
fromLink();
""".replace("MAX_TEXT_CHARS", str(MAX_TEXT_CHARS)).replace("MAX_NAMES", str(MAX_NAMES))


class PicksReader(ReactiveHTML):
    """A student's answers beside the key: a link's (#picks=...), a file's, or pasted text."""

    key = param.List(default=[], doc="reader_key(answer_key()): the questions, their choices and the right one's index")
    version = param.String(default="", doc="kvlab's version, which a file's stamp is compared with")

    _template = """<div id="reader" class="kv-picks">
<h2>A student's answers</h2>
<p>A student's "Copy my answers" link opens this page with their answers shown here. Or read the file their
"Download my answers" saved, or paste a link or a file's text.</p>
<p><label>Answers file <input id="file" type="file" accept=".json,application/json"/></label></p>
<p><label>Link or file text <textarea id="paste" rows="3" cols="40"></textarea></label></p>
<p><button id="read" type="button">Read the pasted answers</button></p>
<p id="message" role="status" aria-live="polite"></p>
<div id="result"></div>
</div>"""
    _scripts = {"render": READ_JS}


PICKS_CSS = """
.kv-picks textarea { display: block; width: 100%; max-width: 40em; box-sizing: border-box; font: inherit; }
.kv-picks input[type=file] { max-width: 100%; }
.kv-picks li[data-pick=wrong] strong { text-decoration: underline; }
"""


def reader(key: dict, stylesheets: list[str]) -> PicksReader:
    """The reader for `key` (answer_key()'s), drawn with the page's `stylesheets` and its own."""
    return PicksReader(key=reader_key(key), version=key["version"], stylesheets=[*stylesheets, PICKS_CSS],
                       sizing_mode="stretch_width")
