import sys

from spanaug.cli.main import main

sys.exit(main())
