import sys
from pathlib import Path

# tests/helpers.py is imported as a plain module.
sys.path.insert(0, str(Path(__file__).parent))
