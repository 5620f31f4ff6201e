"""Connects to host:port over TCP (a plain blocking connect) and sends one line."""

import socket
import sys

with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as conn:
    conn.connect((sys.argv[1], int(sys.argv[2])))
    conn.sendall(b"hello\n")
