"""Capacity search (Nighthawk-style): the search itself over plain numbers (search), and the suite that
runs each step as an ordinary row and writes capacity.json (run)."""
