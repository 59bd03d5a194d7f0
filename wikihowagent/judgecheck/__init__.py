"""`judge-check`: meta-evaluation of the rubric judge (perturbations, self-consistency)."""
