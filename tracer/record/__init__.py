"""`tracer record`: every syscall of one command (raw syscall tracepoints) into one Parquet trace.

Recorder, ring-buffer decoding, fd -> path tracking, /proc reads and the syscall table.
May import the top of `tracer`; never `tracer.fleet`, `tracer.cli` or `baseline`.
"""
