"""The landing page: what kvlab is and a card for each panel."""

# A page script of the composition root (kvlab/), not of app/: the front page is app's shell with the
# lessons' course map, and lessons sit above app, so only a module above both may put them together.
from kvlab.app.shell.landing import build_landing
from kvlab.lessons.render import COURSE_CSS, LESSON_CSS, course_map_html

build_landing(course_map_html(), [LESSON_CSS, COURSE_CSS]).servable()
