import sys

from baseline.cli import main

sys.exit(main())
