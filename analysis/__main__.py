import sys

from analysis.report import main

sys.exit(main())
