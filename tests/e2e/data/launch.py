# launch.py N SCRIPT: N ranks as separate processes (Debian's torchrun 1.13 fails on Python 3.11).
import os, socket, subprocess, sys
n, script = int(sys.argv[1]), sys.argv[2]
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
procs = []
for r in range(n):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    procs.append(subprocess.Popen([sys.executable, script], env=env))
codes = [p.wait() for p in procs]
for r, code in enumerate(codes):
    if code:  # which rank ended how (a signal is -N): the others' errors are only its effect
        print(f"launch: rank {r} (pid {procs[r].pid}) exited {code}", file=sys.stderr, flush=True)
sys.exit(max(codes, key=abs))
