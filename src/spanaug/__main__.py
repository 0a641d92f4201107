import sys

from spanaug.cli import main

sys.exit(main())
