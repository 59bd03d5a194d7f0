"""`wikihowagent report`: a self-contained static site for reading runs (overview, figures, browser)."""
