"""The fleet tracer: probe sets, the emit-on-failure BPF program, the snapshot daemon, the spool.

May import the top of `tracer`; never `tracer.record`, `tracer.cli` or `baseline`.
"""
