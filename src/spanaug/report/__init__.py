"""The HTML report's own pages: tables of every result, example chains, warnings and the summary.

The top layer below the CLI: it reads the results of every other layer (the Frame ID curves
included) and imports none of their models.
"""
