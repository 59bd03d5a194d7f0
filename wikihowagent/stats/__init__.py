"""Statistics shared by the stages: bootstrap CIs over tutorials, paired tests with Holm's correction
(`paired.py`), Bradley–Terry rankings (`ranking.py`) and applying a judge calibration (`calibration.py`, below
both `evaluate --calibration` and `align --calibrate`). scipy/statsmodels/choix are imported inside the functions."""
