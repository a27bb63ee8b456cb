"""``python -m auditor.cli``: the same as the ``kafka-auditor`` console script."""

from auditor.cli import main

main()
