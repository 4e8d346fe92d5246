"""The application: the ``tidemark`` command and everything it shows.

``cli`` turns errors into messages and exit codes; ``commands`` has one module per subcommand,
each of which parses its arguments, opens the pipeline (``pipeline.Pipeline``), calls it and
prints what it returns through ``output``. ``page_server`` serves the status page and ``demo``
runs the live demo. The only package that imports more than one stage.
"""
