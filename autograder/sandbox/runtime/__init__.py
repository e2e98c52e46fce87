"""The only kit code that runs beside student code: copied whole into each zygote's folder.

Its modules import the standard library, torch and each other, never the rest of the kit.
"""
