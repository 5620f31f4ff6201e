from tracer.cli import main
from tracer.cli.common import exit_process

exit_process(main())
