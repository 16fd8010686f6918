"""The pages zk2kraft writes, rendered from Jinja2 templates (``templates/``) with
autoescape on (:mod:`.env`): the controllers' live migration page (:mod:`.live`), the
driven migration's (:mod:`.driven`), the rehearsal's report.html (:mod:`.rehearsal`),
and their inline SVG charts (:mod:`.svg`).

Beside ``records`` and ``observability``, in their layer just above ``common``: the
models it renders come in as plain data (dicts and dataclasses the packages above
build), so ``server``, ``operate``, ``rehearse`` and ``cli`` can all use it and it
imports none of them.
"""
