"""A validity worker that fails while reading its first layer, as USD might: `crash` (SIGSEGV) or
`hang` (never returns). The tests put it in place of the real worker's command line
(gates/validity/runner.py `worker_command`) to exercise the runner's crash and time-limit handling;
the production worker has no such hook.

    python tests/faulty_validity_worker.py crash|hang CONFIG
"""
import os
import signal
import sys
import time

from usd_repair_verifier.gates.validity import worker


def failing_open_layer(self, loc):
    self.note(f"layer {loc.ident()}")   # the progress line the runner's report names the layer from
    if sys.argv[1] == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(3600)


if __name__ == "__main__":
    worker.Worker.open_layer = failing_open_layer
    sys.exit(worker.main(sys.argv[2]))
