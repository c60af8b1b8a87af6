"""The answer key, for instructors: every question of every lesson with its key (lessons/answer_key.py)."""

from kvlab.lessons.render import answers_page

answers_page().servable()
