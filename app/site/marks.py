"""What a page marks for the site build while it runs at build time (standard library only).

The lessons' pages import these (lessons sit above app); the build reads them back
(app/site/render.py, app/site/document.py), so the builder needs nothing of the lessons.
"""

from __future__ import annotations

# The recap a lesson shows once every step is answered: the build names the layout with this class
# `lesson:recap`, which the browser bridge shows, as the server's LessonBody does.
RECAP_CLASS = "kv-recap"

# A lesson's live views, in page order, appended while the lesson renders at build time: the build
# names view i's models lv<i>:... (its layout carries the class kv-live-<i>) and hands the page these
# specs. Cleared before each page runs.
BUILD_LIVE_SPECS: list[dict] = []

# A lesson's column and each step's layout (the step's key after the prefix): the build names them
# `lesson:body` and `step:<key>`, and the bridge shows one step alone for ?step=<key>, as the
# server's LessonBody does.
BODY_CLASS = "kv-lesson-body"
STEP_CLASS_PREFIX = "kv-step-"

# Files a page hands the build to write into the site beside it (name -> text), filled while pages
# run: the answer key page's answers.json.
BUILD_FILES: dict[str, str] = {}
