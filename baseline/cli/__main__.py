from baseline.cli import entry

entry()  # sets the allocator before anything imports polars
