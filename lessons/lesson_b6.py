"""Lesson B6 as a page (served by `kvlab serve`, built by `kvlab build-site`)."""

from kvlab.lessons.course import lesson
from kvlab.lessons.render import lesson_page

lesson_page(lesson("B6")).servable()
