"""The instructor's tools driven in a real Chromium, the same walk in both runtimes (tests/browser/
test_instructor.py under `kvlab serve`, tests/site/test_site_instructor.py on the built site): a
student answers a question in each of two lessons, copies and downloads their answers from the course
map, and the answer key page marks them; a hostile file, a huge one and one of the wrong shape are
refused with a message and nothing of them runs; ?step=<key>&embed=1 shows one step alone; axe on
the key page with the answers shown, at 320 px in both themes. Returns plain data for the tests."""

from __future__ import annotations

import json

from kvlab.lessons import course

from .axe import AXE_JS, run_axe
from .support import painted

# (lesson, step index, pick the right choice?): one right, one wrong, in two lessons.
# The first step of each: a later step's question shows once the one before it is answered.
PICKS = (("A1", 0, False), ("A2", 0, True))
STEP = ("A1", 0)  # the step opened alone
HOSTILE = {"kvlab": "<script>window.kvlabPwned = 1</script>",
           "picks": {"<img src=x onerror=\"window.kvlabPwned=1\">": {"x": 1}, "A2": [1, 2],
                     "A1": {"a1-llama": "<b>1</b>", "a1-headdim": 99, "<svg onload=\"window.kvlabPwned=1\">": 0}}}
READER = ".kv-picks"
PWNED_JS = "() => window.kvlabPwned === undefined && !document.querySelector('img[src=x]')"


def planned() -> list[tuple[str, str, int, bool]]:
    """(lesson, step key, choice index, right?) of each pick PICKS makes."""
    out = []
    for code, n, right in PICKS:
        p = course.lesson(code).steps[n].prediction
        index = next(i for i, c in enumerate(p.choices) if (c.label == p.answer) == right)
        out.append((code, p.key, index, right))
    return out


def _reader_text(page) -> dict:
    reader = page.locator(READER).first
    return {"message": reader.locator("[role=status]").inner_text(),
            "marks": {item.get_attribute("data-step"): item.get_attribute("data-pick") for item in reader.locator("li[data-step]").all()},
            "scores": [h.inner_text() for h in reader.locator("h3").all()]}


def _hostile(page, tmp_dir) -> dict:
    """Three files the key page must refuse or read in part, each with its message."""
    from playwright.sync_api import expect

    out = {}
    files = {"hostile": json.dumps(HOSTILE), "huge": json.dumps({"picks": {"A1": {"a1-llama": 0}}, "pad": "x" * 500_000}),
             "wrong": json.dumps([1, 2, 3])}
    status = page.locator(f"{READER} [role=status]").first
    for name, text in files.items():
        before = status.inner_text()
        path = tmp_dir / f"{name}.json"
        path.write_text(text, encoding="utf-8")
        page.locator(f"{READER} input[type=file]").set_input_files(str(path))
        expect(status).not_to_have_text(before, timeout=10_000)
        out[name] = {**_reader_text(page), "safe": page.evaluate(PWNED_JS)}
    return out


def walk(context, url, ready, tmp_dir) -> dict:
    """`url(slug, query='')`: a page's address; `ready(page)`: waits until a page is drawn."""
    out: dict = {"errors": []}

    def open_page(slug: str, query: str = "", address: str | None = None):
        page = context.new_page()
        page.on("pageerror", lambda e: out["errors"].append(f"{slug}: {e}"))
        page.goto(address or url(slug, query))
        ready(page)
        return page

    # A student answers one question in each of two lessons; each pick is kept in the browser.
    for code, key, index, _ in planned():
        page = open_page(course.slug(code))
        n = [p.key for p in course.lesson(code).predictions].index(key)
        label = course.lesson(code).predictions[n].choices[index].label
        page.locator(".kv-predict").nth(n).get_by_role("button", name=label, exact=True).click()
        page.get_by_text(f"You predicted {label}.").first.wait_for(timeout=15_000)
        if code == STEP[0]:
            page.get_by_role("button", name="Copy link to this step").nth(STEP[1]).click()
            page.wait_for_function("window.kvlabLastCopied !== undefined", timeout=10_000)
            out["step_link"] = page.evaluate("window.kvlabLastCopied")
        out["stored"] = page.evaluate("JSON.parse(localStorage.getItem('kvlab-picks'))")
        page.close()

    # The course map: "Copy my answers" (a link to the key page) and "Download my answers" (a file).
    page = open_page("lessons")
    page.get_by_role("button", name="Copy my answers").click()
    page.wait_for_function("window.kvlabLastCopied !== undefined", timeout=10_000)
    out["link"] = page.evaluate("window.kvlabLastCopied")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download my answers").click()
    out["file"] = json.loads(open(download.value.path(), encoding="utf-8").read())
    page.close()

    # The link opens the key page with the answers marked; axe with them shown, at 320 px, both themes.
    page = open_page("answers", address=out["link"])
    page.locator(f"{READER} li[data-step]").first.wait_for(timeout=15_000)
    out["read"] = _reader_text(page)
    page.set_viewport_size({"width": 320, "height": 800})
    painted(page)
    out["axe"] = {"light": run_axe(page) if AXE_JS.is_file() else []}
    out["wide_px"] = page.evaluate("document.documentElement.scrollWidth")
    out["hostile"] = _hostile(page, tmp_dir)
    page.close()
    page = open_page("answers", "?theme=dark#" + out["link"].split("#", 1)[1])  # the dark theme, as its button opens it
    page.set_viewport_size({"width": 320, "height": 800})
    page.locator(f"{READER} li[data-step]").first.wait_for(timeout=15_000)
    # The static site opens the dark page in place of the light one, and its heading is drawn by
    # BokehJS: axe once the page's documents are idle (on a loaded machine it once ran before the h1).
    painted(page)
    out["axe"]["dark"] = run_axe(page) if AXE_JS.is_file() else []
    page.close()

    # One step alone, embedded.
    code, n = STEP
    key = course.lesson(code).predictions[n].key
    page = open_page(course.slug(code), f"?step={key}&embed=1")
    questions = [p.question[:60] for p in course.lesson(code).predictions]
    page.get_by_text(questions[n]).first.wait_for(timeout=15_000)
    out["alone"] = {"questions": [q for q in questions if page.get_by_text(q).first.is_visible()],
                    "steps": sum(s.is_visible() for s in page.locator(".kv-predict").all()),
                    "embed": page.evaluate("document.documentElement.classList.contains('kvlab-embed')"),
                    "header_shown": page.locator(".kv-head").first.is_visible()}
    page.close()
    return out


def assert_walk(out: dict, step_link_ends: str) -> None:
    """What both runtimes must show (the tests call this with the walk's data)."""
    plan = planned()
    assert out["errors"] == []
    stored = {code: {key: index} for code, key, index, _ in plan}
    assert out["stored"] == stored and out["file"]["picks"] == stored and out["file"]["kvlab"]
    assert "#picks=" in out["link"]
    assert out["read"]["marks"] == {key: "right" if right else "wrong" for _, key, _, right in plan}
    assert [s.split(":")[-1].strip() for s in out["read"]["scores"]] == [f"{int(right)} of 1 right (1 not answered)"
                                                                          for *_, right in plan]
    assert out["read"]["message"].startswith("1 of 2 answers right.")
    code, n = STEP
    key = course.lesson(code).predictions[n].key
    assert step_link_ends + key in out["step_link"]
    hostile = out["hostile"]
    assert all(h["safe"] for h in hostile.values()), hostile
    assert "Ignored, as this key does not hold them: lessons " in hostile["hostile"]["message"]
    said = hostile["hostile"]["message"]
    assert "<img src=x" in said and "choices A1 a1-llama=<b>1</b>, A1 a1-headdim=99" in said
    assert hostile["hostile"]["marks"] == {} and "No answer to show." in hostile["hostile"]["message"]
    assert "Nothing was read." in hostile["huge"]["message"] and hostile["huge"]["marks"] == {}
    assert "neither a file" in hostile["wrong"]["message"]
    assert out["alone"]["questions"] == [course.lesson(code).predictions[n].question[:60]] and out["alone"]["steps"] == 1
    assert out["alone"]["embed"] and not out["alone"]["header_shown"]
