"""Read a directory of TensorBoard event files with TensorBoard's own readers (the
`tensorboard` package), for the CLI tests.

  tb_events.py DIR     one JSON object: {"files": [...], "file_versions": [...],
                       "scalars": {tag: [[step, value], ...]}} with the scalars as
                       TensorBoard shows them (EventAccumulator: restarts purged)
"""
import glob
import json
import logging
import os
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)  # "purging expired events" on a restart is expected
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402


def main():
    d = sys.argv[1]
    files = sorted(glob.glob(os.path.join(d, "events.out.tfevents.*")))
    versions = []
    for f in files:
        first = next(iter(EventFileLoader(f).Load()))
        versions.append(first.file_version)
    ea = EventAccumulator(d, size_guidance={"scalars": 0})
    ea.Reload()
    scalars = {t: [[e.step, e.value] for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}
    print(json.dumps({"files": [os.path.basename(f) for f in files], "file_versions": versions,
                      "scalars": scalars}))


main()
