"""Lesson 2 as a page: `panel serve lessons/serving.py` (served by `kvlab serve`)."""

from lessons.content import serving
from lessons.render import lesson_page

lesson_page(serving.build()).servable()
