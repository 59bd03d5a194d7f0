import fcntl
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# tests/helpers.py is imported as a plain module.
sys.path.insert(0, str(Path(__file__).parent))
# Tests live in one folder per part of the package (tests/judge/, tests/report/, ...) and import helpers from
# one another by module name (`from test_compare import make_run`): every such folder is on sys.path, so the
# import works from any folder and when one file runs alone (test file names are unique across the folders).
for _folder in sorted(Path(__file__).parent.iterdir()):
    if _folder.is_dir() and any(_folder.glob("test_*.py")):
        sys.path.insert(1, str(_folder))

# The files whose `slow` tests drive the embedded model (llama.cpp on every core).
EMBEDDED_MODEL = {
    "test_real_model.py",
    "test_real_personas.py",
    "test_interrupt_real_model.py",
    "test_backends.py",
    "test_evaluation_models.py",
}
MODEL_LOCK = Path(tempfile.gettempdir()) / "wikihowagent-model.lock"


@pytest.fixture(autouse=True)
def _one_embedded_model_at_a_time(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that drives the embedded model holds MODEL_LOCK while it runs: under `pytest -n N` (as `make test`
    runs the suite) two workers never run the model at once (two models slow each other far more than twice),
    nor does a second suite on the same machine."""
    node = request.node
    if node.path.name not in EMBEDDED_MODEL or node.get_closest_marker("slow") is None:
        yield
        return
    with open(MODEL_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield
