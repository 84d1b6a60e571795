"""The pages: Jinja2 templates and their static assets (the evaluation report, the compare page of
``hybrid serve``), shipped in the package so they work offline and from an installed wheel."""
