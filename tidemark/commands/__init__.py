"""The subcommands of ``tidemark``, one module each: parse the arguments, open the pipeline
(``tidemark.pipeline``), call one method, print what it returns (``tidemark.output``).

``tidemark.cli`` lists them in the order of ``--help``.
"""
