"""`wikihowagent model prepare | path | remove`: the embedded model's weights in the user cache."""
