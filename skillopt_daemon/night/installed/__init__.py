"""After a rule is installed: did it help (outcomes), and is it still worth keeping (removals)."""
