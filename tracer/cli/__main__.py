from tracer.cli import entry

entry()
