"""Peak RSS of one command under several environments (one run each), via os.wait4.
usage: rss_probe.py LABEL=ENV1=V1,ENV2=V2 ... -- COMMAND ARGS"""
import os
import subprocess
import sys

sep = sys.argv.index("--")
variants, cmd = sys.argv[1:sep], sys.argv[sep + 1:]
for v in variants:
    label, _, assigns = v.partition(":")
    env = dict(os.environ)
    for a in filter(None, assigns.split(",")):
        k, _, val = a.partition("=")
        env[k] = val
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    print(f"{label}: rc={os.waitstatus_to_exitcode(status)} maxrss={ru.ru_maxrss / 1024:.0f} MB", flush=True)
