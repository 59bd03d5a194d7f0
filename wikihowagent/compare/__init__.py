"""`wikihowagent compare`: runs judged head to head (a pairwise judge in both orders, win rates,
Bradley–Terry)."""
