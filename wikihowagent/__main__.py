"""`python -m wikihowagent ...` = the `wikihowagent` command."""

from wikihowagent.cli import main

main()
