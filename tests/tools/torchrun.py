#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""torchrun.py NPROC COMMAND [ARGS...] — torchrun --standalone --no_python
--nproc_per_node NPROC COMMAND ARGS, through torch's own elastic launcher
(the agent, the c10d rendezvous, LOCAL_RANK/LOCAL_WORLD_SIZE/RANK/... for
each worker), with the LaunchConfig built here: Debian 12's torchrun (torch
1.13 on Python 3.11) crashes in its own argument handling (--redirects and
--tee parse to None: "'NoneType' object has no attribute 'get'") before it
starts anything, and `python3 -m torch.distributed.run` is the same code.
Exit status: 0 when every worker exited 0, else 1 (torch raises
ChildFailedError, printed on stderr)."""
import shutil
import sys
import tempfile

from torch.distributed.elastic.multiprocessing import Std
from torch.distributed.launcher.api import LaunchConfig, elastic_launch


def main():
    if len(sys.argv) < 3:
        print("usage: torchrun.py NPROC COMMAND [ARGS...]", file=sys.stderr)
        return 2
    # the agent's log dir (by default a /tmp/torchelastic_* it leaves
    # behind): made here, removed however the run ends
    log_dir = tempfile.mkdtemp(prefix="torchelastic_")
    cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=int(sys.argv[1]), run_id="nodetune-test",
                       rdzv_backend="c10d", rdzv_endpoint="127.0.0.1:0", rdzv_configs={}, max_restarts=0,
                       monitor_interval=0.2, redirects=Std.NONE, tee=Std.NONE, log_dir=log_dir)
    try:
        elastic_launch(cfg, sys.argv[2])(*sys.argv[3:])
    except Exception as e:  # ChildFailedError: a worker failed
        print(f"torchrun.py: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
