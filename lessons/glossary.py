"""Glossary: the terms the lessons use, each with the lesson that teaches it."""

from kvlab.lessons.render import glossary_page

glossary_page().servable()
