"""A job's logging and metrics plumbing, with the standard library's handlers (round forty).

    logjob.py syslog SOCKET MSGS          SysLogHandler to a unix socket (a syslog daemon's)
    logjob.py tcp PORT MSGS               SocketHandler to a log collector on 127.0.0.1:PORT
    logjob.py rotate LOG ARCHIVE MSGS MAX RotatingFileHandler, maxBytes MAX, backups named into
                                          ARCHIVE ("-": beside LOG)
    logjob.py file LOG MSGS               FileHandler
    logjob.py textfile TMP FINAL METRICS  a Prometheus textfile: TMP written, then renamed to FINAL

MSGS: a file of messages, one a line; each is logged at INFO.
"""

import logging
import logging.handlers
import os
import sys


def messages(path):
    with open(path) as fh:
        return [line.rstrip("\n") for line in fh]


def run(handler, msgs):
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("job")
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    for m in msgs:
        log.info(m)
    handler.close()


def main(argv):
    mode = argv[1]
    if mode == "syslog":
        run(logging.handlers.SysLogHandler(address=argv[2]), messages(argv[3]))
    elif mode == "tcp":
        run(logging.handlers.SocketHandler("127.0.0.1", int(argv[2])), messages(argv[3]))
    elif mode == "rotate":
        log, archive, msgs, most = argv[2], argv[3], argv[4], int(argv[5])
        handler = logging.handlers.RotatingFileHandler(log, maxBytes=most, backupCount=3)
        if archive != "-":
            handler.namer = lambda name: os.path.join(archive, os.path.basename(name))
        run(handler, messages(msgs))
    elif mode == "file":
        run(logging.FileHandler(argv[2]), messages(argv[3]))
    elif mode == "textfile":
        tmp, final = argv[2], argv[3]
        with open(argv[4]) as fh, open(tmp, "w") as out:
            for line in fh:
                name, value = line.split()
                out.write(f"# TYPE {name} gauge\n{name} {value}\n")
        os.replace(tmp, final)
    else:
        sys.exit(f"logjob: unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv)
