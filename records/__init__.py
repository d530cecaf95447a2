"""Episode records: every trial's model, attempt, task version, submission and graders' reports.

`usd_repair_verifier.records.store.open_store(url)` is the Python API (docs/records.md); `usdgrade records
ingest|report|show` the commands.
"""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.records...
