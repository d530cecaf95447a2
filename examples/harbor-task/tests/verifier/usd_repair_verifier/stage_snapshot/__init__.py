"""Read a composed USD stage once into plain, picklable, comparable data.

Everything downstream (checks, gates, scoring) works on these snapshots, never on
live pxr objects, so a stage is opened once per process and measurements stay
pure functions of plain data.
"""
