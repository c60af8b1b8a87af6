"""Lesson 1 as a page: `panel serve lessons/kv_cache.py` (served by `kvlab serve`)."""

from kvlab.lessons.content import kv_cache
from kvlab.lessons.render import lesson_page

lesson_page(kv_cache.build()).servable()
