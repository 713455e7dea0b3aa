"""Sphinx configuration of cdtypes' API reference (scripts/python-docs builds it).

autodoc reads the docstrings of the installed package (scripts/python-docs installs it into its
own venv first): nothing is mocked, so cdtypes.mpi needs mpi4py and cdtypes.ucx the transport.
The docstrings are plain reStructuredText (``literals``, ``::`` blocks), no Google or NumPy
sections, so napoleon is not used.
"""

import cdtypes

project = "cdtypes"
author = "the libcdt authors"
copyright = "the libcdt authors, MIT licence"
version = release = cdtypes.__version__

extensions = ["sphinx.ext.autodoc"]
exclude_patterns = ["_build"]
root_doc = "index"

# members in the order of the source, documented ones only (scripts/python-docs fails on a public
# name without a docstring, so nothing public is left out)
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
# a method shows its own docstring only: one of mpi4py's that cdtypes.mpi overrides documents
# mpi4py's behaviour, not ours
autodoc_inherit_docstrings = False
autoclass_content = "class"

# mpi4py's classes, which cdtypes.mpi's communicators extend, are documented by mpi4py (the
# build fetches no intersphinx inventory): their names stay plain text. (References to builtin
# classes, the exceptions' bases, need no entry: Sphinx does not report those.)
nitpick_ignore_regex = [("py:class", r"mpi4py\.MPI\..*")]

html_theme = "alabaster"
html_title = "cdtypes %s API reference" % release
html_show_sourcelink = False
