"""`hwinfo run`: a GPU or MIG device for a command, in turn, on a host without a scheduler.

choose.py decides from a GPU snapshot and the claims which devices fit; claimdir.py keeps
claims and the line of waiters in the claims directory (collect/claims.py reads it);
wait.py waits in line; the command is started by hwinfo/child.py.
"""
