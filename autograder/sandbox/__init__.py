"""The sandbox layer: runs code in isolation, and knows no notebooks, chapters or pytest.

launcher (the judge's handle on the zygote), process (one sandboxed child),
limits; runtime/ is copied whole to the child and is all of the kit it sees.
"""
