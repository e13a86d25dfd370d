"""The course's teaching: the guided lesson (:mod:`lib.teaching.lesson`: its steps, fixed sentences and choices,
answer checking), the attention calculator's toy (:mod:`lib.teaching.toy_attention`), the glossary and the one
prose word counter.

The lesson's step modules (:mod:`~lib.teaching.lesson_attention`, :mod:`~lib.teaching.lesson_senses`,
:mod:`~lib.teaching.lesson_geometry`) share one convention: each function takes the model's numbers as arrays and
returns the step's result with its :class:`lib.teaching.lesson.Question`; no function there runs a model.
"""
