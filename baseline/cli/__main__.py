from baseline.cli import configure_allocator, main
from tracer.cli.common import exit_process

configure_allocator()  # before anything imports polars
exit_process(main())
