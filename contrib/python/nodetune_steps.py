# SPDX-License-Identifier: MIT
"""nodetune_steps -- tell nodetune about a training loop's steps.

No dependencies (standard library only).  Two lines in a PyTorch loop:

    from nodetune_steps import StepReporter
    steps = StepReporter()                      # a no-op outside nodetune
    for batch in loader:
        with steps.step(samples=len(batch)) as s:
            with s.phase("forward"):
                loss = model(batch)
            with s.phase("backward"):
                loss.backward()
            with s.phase("optimizer"):
                opt.step()

Under `nodetune ab` or `nodetune observe` the job is given
NODETUNE_STEP_FD (a descriptor open for appending) or NODETUNE_STEP_FILE (a
FIFO or file); each step becomes one JSON line, written in one write():

    {"step": N, "t": SECONDS, "samples": K, "rank": R, "phases": {"forward": SECONDS, ...}}

t is the step's wall time; phases are the times of the phases timed inside
it.  The rank comes from RANK (torchrun), OMPI_COMM_WORLD_RANK (mpirun),
SLURM_PROCID (srun), else 0.  The protocol is agent/lib/base/steps.h's.
"""

import json
import os
import sys
import time

__all__ = ["StepReporter"]

_LINE_MAX = 4000          # one write() below PIPE_BUF: ranks never interleave
_NAME_OK = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def _rank():
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def _open_target():
    # The descriptor is taken only when it is the step file itself: a
    # launcher (mpirun) may have closed it and the number may now be one of
    # its sockets, which a step line must never reach.
    fd = os.environ.get("NODETUNE_STEP_FD", "")
    path = os.environ.get("NODETUNE_STEP_FILE", "")
    if fd.isdigit():
        try:
            st = os.fstat(int(fd))
            if not path or os.path.samestat(os.stat(path), st):
                return int(fd), False
        except OSError:
            pass
    path = os.environ.get("NODETUNE_STEP_FILE", "")
    if path:
        try:
            return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC), True
        except OSError as e:
            print(f"nodetune_steps: {path}: {e.strerror} (no step reports)", file=sys.stderr)
    return None, False


class _Phase:
    def __init__(self, step, name):
        self._step, self._name = step, name

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self._step.phases[self._name] = self._step.phases.get(self._name, 0.0) + time.perf_counter() - self._t0
        return False


class _Step:
    def __init__(self, reporter, samples):
        self._reporter, self.samples, self.phases = reporter, samples, {}

    def phase(self, name):
        """A context manager timing one phase of this step (name: [a-z0-9_], 1-32)."""
        if not name or len(name) > 32 or not set(name) <= _NAME_OK:
            raise ValueError(f"nodetune_steps: phase name {name!r}: 1-32 of [a-z0-9_]")
        return _Phase(self, name)

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self._reporter.report(time.perf_counter() - self._t0, self.samples, self.phases)
        return False


class StepReporter:
    """Writes one line per step where nodetune asked for them; else nothing."""

    def __init__(self, rank=None):
        self._fd, self._owned = _open_target()
        self._rank = _rank() if rank is None else int(rank)
        self._next = 0

    @property
    def enabled(self):
        return self._fd is not None

    def step(self, samples=None):
        """A context manager around one training step."""
        return _Step(self, samples)

    def report(self, seconds, samples=None, phases=None):
        """Report a step timed by the caller: its wall time in seconds."""
        step, self._next = self._next, self._next + 1
        if self._fd is None:
            return
        record = {"step": step, "t": max(0.0, float(seconds)), "rank": self._rank}
        if samples is not None:
            record["samples"] = samples
        if phases:
            record["phases"] = {k: max(0.0, float(v)) for k, v in phases.items()}
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        if len(line) > _LINE_MAX:
            line = (json.dumps({k: record[k] for k in ("step", "t", "rank")}) + "\n").encode()
        try:
            os.write(self._fd, line)
        except OSError as e:
            print(f"nodetune_steps: writing a step report failed: {e.strerror} (no more)", file=sys.stderr)
            self.close()

    def close(self):
        if self._fd is not None and self._owned:
            os.close(self._fd)
        self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
