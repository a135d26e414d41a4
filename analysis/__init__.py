"""Reading results folders and turning them into charts and an HTML report."""
from analysis.load import load_results

__all__ = ["load_results"]
