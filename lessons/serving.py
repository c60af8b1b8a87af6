"""Lesson 2 as a page: `panel serve lessons/serving.py` (served by `kvlab serve`)."""

from kvlab.lessons.content import serving
from kvlab.lessons.render import lesson_page

lesson_page(serving.build()).servable()
