"""Panel 1 in a real Chromium: load it, move real widgets, and check every number against sim."""

import pytest
from kvlab.app.viewlayer.fit_curve import PROMPT_LABEL
from kvlab.app.viewlayer.hbm_bar import EDGE_LABEL
from kvlab.app.viewlayer.settings import LABELS
from kvlab.sim import Scenario, catalog, evaluate
from kvlab.sim.units import GIB, KIB

from devtools.chromium import SET_SLIDER_JS

from .sim_readout import assert_shows

pytestmark = pytest.mark.browser


def check_admission(page, **state):
    """Every figure panel 1 shows equals sim's for `state` (waiting for the reply to arrive)."""
    return page.eventually(lambda: _check_admission(page, **state))


def _check_admission(page, **state):
    r = evaluate(Scenario(**state))
    assert page.text("max_sequences") == f"{r.max_sequences:,}"
    if r.kv_pool_bytes > 0:
        assert page.text("batch") == f"{r.batch:,}"
    else:  # nothing runs: no batch is shown, the reason is (issue 14)
        assert page.text("batch") == "\u2014" and page.text("batch_caption") == "weights do not fit"
    assert_shows(page.text("kv_pool"), r.kv_pool_bytes / GIB)
    assert_shows(page.text("kv_per_token"), r.kv_bytes_per_token / KIB)
    assert_shows(page.text("hbm_weights"), r.weight_bytes / GIB)
    assert_shows(page.text("hbm_kv_used"), r.kv_pool_used_bytes / GIB)
    assert page.text("kv_formula").startswith(r.kv_formula.replace(" x ", " \u00d7 "))
    assert page.text("log").split("\n") == r.log
    return r


def test_defaults_are_the_seed_panel(kv_page):
    kv_page.open("/admission")
    r = check_admission(kv_page)
    assert (r.max_sequences, r.batch) == (93, 32)
    assert kv_page.errors == []


def test_keyboard_slider_and_buttons_drive_the_numbers(kv_page):
    page = kv_page.open("/admission")
    handle = page.widget("prompt_tokens").locator(".noUi-handle")
    handle.focus()
    for _ in range(3 * 8):  # 8 steps per doubling: 4k -> 32k, the seed's drag
        page.page.keyboard.press("ArrowRight")
    check_admission(page, prompt_tokens=32768)
    assert page.widget("prompt_tokens-exact").locator("input").input_value() == "32768"
    # the slider's own title reads in tokens, not log2 (every session has its own formatter)
    assert page.widget("prompt_tokens").locator(".bk-slider-title").inner_text() == "Prompt tokens (log scale): 32,768"
    page.widget("kv_dtype").get_by_role("button", name="fp8").click()
    r = check_admission(page, prompt_tokens=32768, kv_dtype="fp8")
    assert (r.max_sequences, r.batch) == (24, 24)
    url = page.settled_url()
    assert "prompt_tokens=32768" in url and "kv_dtype=fp8" in url


def test_select_model_and_gpu_and_type_an_exact_prompt(kv_page):
    page = kv_page.open("/admission")
    page.widget("model").locator("select").select_option(label="Qwen3-32B")
    check_admission(page, model="qwen3-32b")
    page.widget("gpu").locator("select").select_option(label=catalog.gpu("h200").name)
    check_admission(page, model="qwen3-32b", gpu="h200")
    box = page.widget("prompt_tokens-exact").locator("input")
    box.fill("5000")
    box.press("Enter")
    check_admission(page, model="qwen3-32b", gpu="h200", prompt_tokens=5000)


def test_a_drag_like_slider_change_and_weights_that_do_not_fit(kv_page):
    page = kv_page.open("/admission?model=qwen3-32b")
    page.page.evaluate(SET_SLIDER_JS, [LABELS["gpu_memory_utilization"], 0.72])
    r = check_admission(page, model="qwen3-32b", gpu_memory_utilization=0.72)
    assert r.max_sequences == 0
    assert "Model weights need 61.02 GiB" in page.text("warnings")
    assert page.errors == []


def _drag(page, handle, dx: float) -> None:
    """Press the mouse on the handle, move it `dx` pixels along the axis, let go."""
    box = handle.bounding_box()
    assert box["width"] >= 44 and box["height"] >= 44  # a touch target (WCAG 2.5.5)
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] - 12
    page.page.mouse.move(x, y)
    page.page.mouse.down()
    page.page.mouse.move(x + dx, y, steps=4)
    page.page.mouse.up()


def test_drag_the_utilisation_edge_and_the_prompt_with_the_mouse_and_the_keyboard(kv_page):
    """The HBM bar's utilisation edge and the fit curve's prompt marker are handles (role=slider): a drag
    with the mouse, then arrow keys, set gpu_memory_utilization and the prompt themselves (the sidebar's
    sliders and the link follow), and every number is sim's for the new values. Dragging the edge right
    leaves the engine less memory."""
    page = kv_page.open("/admission")
    edge = page.page.get_by_role("slider", name=EDGE_LABEL)
    assert edge.get_attribute("aria-valuenow") == "0.9" and edge.get_attribute("aria-valuetext") == "0.90"
    _drag(page, edge, 60)
    dragged = float(edge.get_attribute("aria-valuenow"))
    assert 0.8 <= dragged <= 0.88, dragged  # 60 px of an 80 GiB bar about 890 px wide: 5.4 GiB, 0.07
    check_admission(page, gpu_memory_utilization=dragged)
    sidebar = page.widget("gpu_memory_utilization").locator(".bk-slider-title")  # "<label>: 0.84"
    page.eventually(lambda: _assert_equal(sidebar.inner_text().rsplit(": ", 1)[1], f"{dragged:.2f}"))
    assert edge.evaluate("(el) => el.getRootNode().activeElement === el")  # a drag leaves the focus on it
    for _ in range(3):
        page.page.keyboard.press("ArrowRight")  # an ARIA slider's Right raises its value: the edge moves left
    keyed = round(dragged + 0.03, 2)
    page.eventually(lambda: _assert_equal(edge.get_attribute("aria-valuetext"), f"{keyed:.2f}"))
    check_admission(page, gpu_memory_utilization=keyed)
    assert f"gpu_memory_utilization={keyed:g}" in page.settled_url()
    page.page.keyboard.press("Home")
    lowest = float(edge.get_attribute("aria-valuemin"))
    check_admission(page, gpu_memory_utilization=lowest)
    page.page.keyboard.press("End")  # the top of the slider, so the prompt has a pool to fill
    util = float(edge.get_attribute("aria-valuemax"))
    check_admission(page, gpu_memory_utilization=util)

    # The prompt on the curve: the log2 prompt slider's handle (an eighth of a doubling a step).
    prompt = page.page.get_by_role("slider", name=PROMPT_LABEL)
    assert prompt.get_attribute("aria-valuetext") == "4,096 tokens"
    _drag(page, prompt, 45)  # rightwards along the log axis: a longer prompt
    tokens = int(prompt.get_attribute("aria-valuetext").removesuffix(" tokens").replace(",", ""))
    assert 4096 < tokens <= 32768, tokens
    check_admission(page, gpu_memory_utilization=util, prompt_tokens=tokens)
    halved = round(2 ** (float(prompt.get_attribute("aria-valuenow")) - 1))
    for _ in range(8):
        page.page.keyboard.press("ArrowLeft")  # one doubling down
    check_admission(page, gpu_memory_utilization=util, prompt_tokens=halved)
    assert page.widget("prompt_tokens-exact").locator("input").input_value() == str(halved)
    assert page.errors == []


def _assert_equal(got, expected):
    assert got == expected, (got, expected)
