"""Re-grading at scale (`usdgrade regrade`): the warm worker that grades many submissions in one
process, its local process pool and Ray engines, and the sources and store it reads and writes."""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.regrade...
