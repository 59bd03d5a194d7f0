"""Statistics shared by the stages: bootstrap CIs over tutorials, paired tests with Holm's correction
(`paired.py`) and Bradley–Terry rankings (`ranking.py`). numpy/scipy/statsmodels/choix are imported inside
the functions."""
