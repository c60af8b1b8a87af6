"""Lessons: the course map, every unit and lesson in order."""

from kvlab.lessons.render import course_page

course_page().servable()
