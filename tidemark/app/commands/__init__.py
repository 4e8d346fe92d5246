"""The subcommands of ``tidemark``, one module each: parse the arguments, open the pipeline
(``tidemark.app.pipeline``), call one method, print what it returns (``tidemark.app.output``).

``tidemark.app.cli`` lists them in the order of ``--help``.
"""
